// Parses RFC 3339 timestamps as Go's time.RFC3339Nano layout accepts them, to milliseconds since the epoch.
// Used for endpoints.kubernetes.io/last-change-trigger-time; a value that does not parse is ignored by callers.

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export function parseRFC3339(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysInMonth) return undefined;
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  let offsetMinutes = 0;
  const zone = m[8] as string;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // Date.UTC maps years 0–99 to 1900s; setUTCFullYear does not
  d.setUTCHours(hour, minute, second, fraction);
  return d.getTime() - offsetMinutes * 60_000;
}
