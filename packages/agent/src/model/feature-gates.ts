// The feature gates the model acts on, passed in explicitly (never a global). Defaults follow upstream's
// current defaults.
export interface FeatureGates {
  /** PreferSameTrafficDistribution: keep node hints and honour PreferSameNode. Beta, on by default upstream. */
  readonly preferSameTrafficDistribution: boolean;
}

export const DEFAULT_FEATURE_GATES: FeatureGates = Object.freeze({ preferSameTrafficDistribution: true });
