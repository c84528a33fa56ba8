// Network-namespace primitives for the lab and the kernel tests. Everything goes through a CommandRunner.
export { NetnsCommandError, NetnsNameError } from './errors.js';
export { MAX_INTERFACE_NAME, checkInterfaceName, checkNamespaceName } from './names.js';
export type { NamespaceProcess } from './exec.js';
export { inNamespace, killNamespaceProcesses, namespacePids, runChecked, startInNamespace } from './exec.js';
export { createNamespace, deleteNamespace, listNamespaces, sweepNamespaces } from './namespace.js';
export type { LinkEnd, RouteSpec } from './link.js';
export {
  addAddress,
  addBridge,
  addRoute,
  addVethPair,
  listAddresses,
  setLinkMaster,
  setLinkUp,
} from './link.js';
export { getSysctl, setSysctl } from './sysctl.js';
