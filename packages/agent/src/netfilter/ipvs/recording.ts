// An IPVS handle that writes down each change it passes on, as ipvsadm's command line (ipvsadm-text.ts): what
// `diff --proxy-mode ipvs` prints of a sync. Only changes the handle behind it accepted are written down; reads
// pass through unrecorded.
import {
  ipvsadmDeleteReal,
  ipvsadmDeleteService,
  ipvsadmReal,
  ipvsadmService,
  ipvsadmTimeouts,
} from './ipvsadm-text.js';
import type { IpvsHandle, IpvsResult, IpvsTimeouts, RealServer, VirtualServer } from './types.js';

export class RecordingIpvs implements IpvsHandle {
  /** The changes so far, in order, one ipvsadm line each. */
  readonly lines: string[] = [];

  constructor(private readonly inner: IpvsHandle) {}

  private record(result: IpvsResult, line: string): IpvsResult {
    if (result.ok) this.lines.push(line);
    return result;
  }

  listVirtualServers(): ReturnType<IpvsHandle['listVirtualServers']> {
    return this.inner.listVirtualServers();
  }

  addVirtualServer(vs: VirtualServer): IpvsResult {
    return this.record(this.inner.addVirtualServer(vs), ipvsadmService('-A', vs));
  }

  updateVirtualServer(vs: VirtualServer): IpvsResult {
    return this.record(this.inner.updateVirtualServer(vs), ipvsadmService('-E', vs));
  }

  deleteVirtualServer(vs: VirtualServer): IpvsResult {
    return this.record(this.inner.deleteVirtualServer(vs), ipvsadmDeleteService(vs));
  }

  listRealServers(vs: VirtualServer): ReturnType<IpvsHandle['listRealServers']> {
    return this.inner.listRealServers(vs);
  }

  addRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    return this.record(this.inner.addRealServer(vs, rs), ipvsadmReal('-a', vs, rs));
  }

  updateRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    return this.record(this.inner.updateRealServer(vs, rs), ipvsadmReal('-e', vs, rs));
  }

  deleteRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    return this.record(this.inner.deleteRealServer(vs, rs), ipvsadmDeleteReal(vs, rs));
  }

  flush(): IpvsResult {
    return this.record(this.inner.flush(), '-C');
  }

  getTimeouts(): ReturnType<IpvsHandle['getTimeouts']> {
    return this.inner.getTimeouts();
  }

  setTimeouts(t: IpvsTimeouts): IpvsResult {
    return this.record(this.inner.setTimeouts(t), ipvsadmTimeouts(t));
  }

  close(): void {
    this.inner.close();
  }
}
