// The configuration's public API: what the CLI and the lab import.
export { earlyRequest, loadProxyConfig, proxyOptionsFrom } from './load.js';
export type { LoadDeps, LoadResult, OptionsRead } from './load.js';
export type { ProxyConfig, ProxyOptions } from './proxy-config.js';
export { parseProxyFlags, flagUsage, FLAGS } from './flags.js';
export type { FlagName, ParsedFlags } from './flags.js';
export { serializeProxyConfig } from './write.js';
export { watchConfigFile } from './watch.js';
export type { ConfigFileEvent, ConfigFileWatcher, WatchResult } from './watch.js';
export { formatProblem } from './problems.js';
export type { ConfigProblem } from './problems.js';
export { parseGoDuration, formatGoDuration } from './duration.js';
export {
  API_VERSION,
  KIND,
  PROXY_MODE_SETTINGS,
  DETECT_LOCAL_MODE_SETTINGS,
  LOGGING_FORMATS,
} from './v1alpha1-types.js';
export type { DetectLocalMode, LoggingFormat, ProxyModeSetting } from './v1alpha1-types.js';
