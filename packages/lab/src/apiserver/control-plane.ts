// What marks the control-plane node as kubeadm marks it: its role label, and (on a cluster with workers, `lab up
// --control-plane-taint`) the taint that keeps Pods without a matching toleration off it.

/** The role label kubeadm gives a control-plane node. */
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** The taint kubeadm puts on a control-plane node: only Pods that tolerate it are scheduled there. */
export const CONTROL_PLANE_TAINT = { key: CONTROL_PLANE_LABEL, effect: 'NoSchedule' } as const;
