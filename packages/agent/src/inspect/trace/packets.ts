// Groups trace events into packets. The kernel's trace id is not enough on its own: it can change when a packet
// is routed (the events after the FORWARD decision carry a new id) and later packets of a flow can reuse an id.
// What does tie a packet together is the rule of our own trace table that marked it (the start of a packet) and,
// for IPv4, the identification field, which neither NAT nor routing changes.
import type { TraceEvent, TracePacketFields } from './events.js';

export interface TracedPacket {
  /** Every event of the packet, in the kernel's order. */
  readonly events: TraceEvent[];
  /** Whether our trace table's marking rule was among them (an unmarked packet carried the bit over loopback). */
  marked: boolean;
  /** The headers when the packet first showed up, and at its last `packet:` event (after NAT). */
  first?: TracePacketFields;
  last?: TracePacketFields;
}

/**
 * The rule of the trace table that sets the bit (see table.ts): `… meta nftrace set 1`, the only rule of its
 * chains (nft names it "unknown rule" when the table came after the monitor started).
 */
export function isMarkingRule(ev: TraceEvent, traceTable: string): boolean {
  return ev.table === traceTable && ev.kind === 'rule';
}

function sameFlowStart(a: TracePacketFields | undefined, b: TracePacketFields | undefined): boolean {
  if (!a || !b || a.protocol !== b.protocol || a.sport !== b.sport) return false;
  if (a.ipId !== undefined || b.ipId !== undefined) return a.ipId === b.ipId;
  // IPv6 has no identification field: the source and the TCP flags are what DNAT leaves alone before SNAT.
  return a.saddr !== undefined && a.saddr === b.saddr && a.tcpFlags === b.tcpFlags;
}

/** Follows events as they arrive; `packets` holds every packet seen so far, oldest first. */
export class PacketAssembler {
  readonly packets: TracedPacket[] = [];
  private readonly byId = new Map<string, TracedPacket>();

  constructor(private readonly traceTable: string) {}

  private open(): TracedPacket {
    const p: TracedPacket = { events: [], marked: false };
    this.packets.push(p);
    return p;
  }

  /** Adds one event; returns the packet it joined. */
  add(ev: TraceEvent): TracedPacket {
    let p = this.byId.get(ev.id);
    if (ev.kind === 'packet') {
      // An id we know, but another packet's headers: the id was reused.
      if (p && p.last?.ipId !== undefined && ev.packet?.ipId !== undefined && p.last.ipId !== ev.packet.ipId)
        p = undefined;
      // A new id with a known packet's headers: the id changed on the way (routing).
      p ??= [...this.packets].reverse().find((x) => sameFlowStart(x.last, ev.packet));
    }
    if (isMarkingRule(ev, this.traceTable) && p?.marked) {
      // A second marking of one packet cannot happen: this is a later packet reusing the id. Its `packet:`
      // event, just before, went to the old one; move it.
      const moved = p.events.at(-1);
      const fresh = this.open();
      if (moved && moved.kind === 'packet' && moved.chain === ev.chain && moved.id === ev.id) {
        p.events.pop();
        fresh.events.push(moved);
        fresh.first = moved.packet;
        fresh.last = moved.packet;
        p.last = [...p.events].reverse().find((e) => e.kind === 'packet')?.packet ?? p.first;
      }
      p = fresh;
    }
    p ??= this.open();
    if (isMarkingRule(ev, this.traceTable)) p.marked = true;
    p.events.push(ev);
    if (ev.kind === 'packet' && ev.packet) {
      p.first ??= ev.packet;
      p.last = ev.packet;
    }
    this.byId.set(ev.id, p);
    return p;
  }

  /** The packets our trace table marked (the ones the user asked about). */
  markedPackets(): TracedPacket[] {
    return this.packets.filter((p) => p.marked);
  }
}

export function assemblePackets(events: readonly TraceEvent[], traceTable: string): TracedPacket[] {
  const a = new PacketAssembler(traceTable);
  for (const ev of events) a.add(ev);
  return a.markedPackets();
}
