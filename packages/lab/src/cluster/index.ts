// The lab's orchestration: `lab up` (startLab), `lab down` (labDown), `lab status`, `lab exec`, and the relay.
export {
  startLab,
  API_OUTAGE_MS,
  LabAlreadyUpError,
  type Lab,
  type LabOptions,
  type NodeHandle,
} from './lab.js';
export { labDown, type DownReport } from './down.js';
export { labStatus, formatStatus, type LabStatus } from './status.js';
export { resolveTarget } from './exec.js';
export { startRelay, startSocketBridge, parseHostPort } from './relay.js';
export { defaultStateDir, labLayout, labPaths, podNamespaceName, DEFAULT_PREFIX } from './layout.js';
export { readLabState } from './state.js';
export { fetchProxyMetrics, metricValue } from './metrics.js';
