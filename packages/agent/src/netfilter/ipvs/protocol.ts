// The numbers of generic netlink and of the kernel's IPVS family that the client uses, named as the uapi headers
// name them (linux/netlink.h, linux/genetlink.h, linux/ip_vs.h). Netlink's own headers and IPVS's integers are in
// the host's byte order; addresses and ports are in network order (the kernel copies them into its __be fields).

// linux/netlink.h
export const NETLINK_GENERIC = 16;

// linux/genetlink.h: the controller, which names families by string and gives each an id at registration.
export const GENL_ID_CTRL = 0x10;
/** struct genlmsghdr: cmd (u8), version (u8), reserved (u16). */
export const GENL_HDRLEN = 4;
export const CTRL_CMD_NEWFAMILY = 1;
export const CTRL_CMD_GETFAMILY = 3;
/** The controller's own version, as libnl's genl_ctrl_resolve (what ipvsadm uses) sends it. */
export const CTRL_VERSION = 1;
export const CTRL_ATTR_FAMILY_ID = 1;
export const CTRL_ATTR_FAMILY_NAME = 2;

// linux/ip_vs.h: the family
export const IPVS_GENL_NAME = 'IPVS';
export const IPVS_GENL_VERSION = 1;

// enum: commands
export const IPVS_CMD_NEW_SERVICE = 1;
export const IPVS_CMD_SET_SERVICE = 2;
export const IPVS_CMD_DEL_SERVICE = 3;
export const IPVS_CMD_GET_SERVICE = 4;
export const IPVS_CMD_NEW_DEST = 5;
export const IPVS_CMD_SET_DEST = 6;
export const IPVS_CMD_DEL_DEST = 7;
export const IPVS_CMD_GET_DEST = 8;
export const IPVS_CMD_SET_CONFIG = 12;
export const IPVS_CMD_GET_CONFIG = 13;
export const IPVS_CMD_FLUSH = 17;

// enum: first-level attributes of a command
export const IPVS_CMD_ATTR_SERVICE = 1;
export const IPVS_CMD_ATTR_DEST = 2;
export const IPVS_CMD_ATTR_TIMEOUT_TCP = 4;
export const IPVS_CMD_ATTR_TIMEOUT_TCP_FIN = 5;
export const IPVS_CMD_ATTR_TIMEOUT_UDP = 6;

// enum: attributes nested in IPVS_CMD_ATTR_SERVICE
export const IPVS_SVC_ATTR_AF = 1;
export const IPVS_SVC_ATTR_PROTOCOL = 2;
export const IPVS_SVC_ATTR_ADDR = 3;
export const IPVS_SVC_ATTR_PORT = 4;
export const IPVS_SVC_ATTR_FWMARK = 5;
export const IPVS_SVC_ATTR_SCHED_NAME = 6;
/** struct ip_vs_flags { u32 flags; u32 mask; }: the kernel keeps its own bits outside `mask`. */
export const IPVS_SVC_ATTR_FLAGS = 7;
export const IPVS_SVC_ATTR_TIMEOUT = 8;
export const IPVS_SVC_ATTR_NETMASK = 9;

// enum: attributes nested in IPVS_CMD_ATTR_DEST
export const IPVS_DEST_ATTR_ADDR = 1;
export const IPVS_DEST_ATTR_PORT = 2;
export const IPVS_DEST_ATTR_FWD_METHOD = 3;
export const IPVS_DEST_ATTR_WEIGHT = 4;
export const IPVS_DEST_ATTR_U_THRESH = 5;
export const IPVS_DEST_ATTR_L_THRESH = 6;
export const IPVS_DEST_ATTR_ACTIVE_CONNS = 7;
export const IPVS_DEST_ATTR_INACT_CONNS = 8;
/** Since Linux 3.18: a real server's own family (another than its service's only with tunnelling). */
export const IPVS_DEST_ATTR_ADDR_FAMILY = 11;

// Service flags (IP_VS_SVC_F_*)
export const IP_VS_SVC_F_PERSISTENT = 0x1;
/** Set by the kernel on every service in its table; a service added with it set is never hashed (ip_vs_svc_hash). */
export const IP_VS_SVC_F_HASHED = 0x2;
export const IP_VS_SVC_F_ONEPACKET = 0x4;
/** The `sh` scheduler's flags: fall back to another server, hash the source port too. */
export const IP_VS_SVC_F_SCHED_SH_FALLBACK = 0x8;
export const IP_VS_SVC_F_SCHED_SH_PORT = 0x10;

// Forwarding (IP_VS_CONN_F_*): kube-proxy's real servers are reached by masquerading (NAT).
export const IP_VS_CONN_F_FWD_MASK = 0x7;
export const IP_VS_CONN_F_MASQ = 0x0;

/** The persistence netmask upstream sets: a whole address (the IPv4 mask as bits, IPv6 as a prefix length). */
export const NETMASK_IPV4 = 0xffffffff;
export const NETMASK_IPV6 = 128;

// linux/socket.h and linux/in.h
export const AF_INET = 2;
export const AF_INET6 = 10;
export const IPPROTO = { TCP: 6, UDP: 17, SCTP: 132 } as const;

/** The errnos IPVS answers with (Linux's generic numbers, as on x86 and arm). */
export const ERRNO = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EBADF: 9,
  EAGAIN: 11,
  EEXIST: 17,
  EINVAL: 22,
  ERANGE: 34,
  EPROTO: 71,
  EAFNOSUPPORT: 97,
} as const;
