// The host programs every guest test needs (QEMU, the parent-death wrapper, and what fetches the kernel and builds
// the initramfs), one list for the kernel gate of each test in this folder.
export const GUEST_TOOLS = [
  'qemu-system-x86_64',
  'setpriv',
  'cpio',
  'depmod',
  'apt-get',
  'dpkg-deb',
] as const;
