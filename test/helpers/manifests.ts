// Manifests as a user hands them to kubectl: YAML text. A Deployment's name, its selector and its Pod template's
// labels must agree, so one function writes all three from the app name.

/** Each line of `text` indented by `spaces`: a block of YAML set inside another. */
function indented(text: string, spaces: number): string {
  const pad = ' '.repeat(spaces);
  return text
    .trim()
    .split('\n')
    .map((line) => pad + line)
    .join('\n');
}

export interface DeploymentManifest {
  /** The Deployment's name and its Pods' `app` label. */
  readonly app: string;
  readonly namespace: string;
  readonly replicas: number;
  /** The Pod template's spec (containers, affinity, …), written from column 0. */
  readonly podSpec: string;
  /** The Deployment itself labelled app=<app> too, for `kubectl delete -l`. */
  readonly labelled?: boolean;
}

/** A Deployment of `replicas` Pods labelled app=<app> and selected by that label, as YAML. */
export function deploymentYaml(d: DeploymentManifest): string {
  const labels = d.labelled === true ? `, labels: {app: ${d.app}}` : '';
  return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${d.app}, namespace: ${d.namespace}${labels}}
spec:
  replicas: ${d.replicas}
  selector: {matchLabels: {app: ${d.app}}}
  template:
    metadata: {labels: {app: ${d.app}}}
    spec:
${indented(d.podSpec, 6)}
`;
}
