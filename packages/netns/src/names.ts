// Names the kernel will accept. Checked up front so that a bad name fails with a reason, not with a half-built
// topology and an RTNETLINK message.
import { NetnsNameError } from './errors.js';

/** IFNAMSIZ is 16 bytes including the terminating NUL. */
export const MAX_INTERFACE_NAME = 15;

const NAME_CHARS = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export function checkNamespaceName(name: string): string {
  if (!NAME_CHARS.test(name))
    throw new NetnsNameError('namespace', name, 'use letters, digits, "-", "_", "."');
  // `ip netns` makes a file under /run/netns; keep well under NAME_MAX and readable in `ip netns list`.
  if (name.length > 64) throw new NetnsNameError('namespace', name, 'longer than 64 characters');
  return name;
}

export function checkInterfaceName(name: string): string {
  if (!NAME_CHARS.test(name))
    throw new NetnsNameError('interface', name, 'use letters, digits, "-", "_", "."');
  if (name.length > MAX_INTERFACE_NAME) {
    throw new NetnsNameError('interface', name, `longer than ${MAX_INTERFACE_NAME} characters (IFNAMSIZ)`);
  }
  return name;
}
