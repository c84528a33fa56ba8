// Where upstream's test vectors live: ../shared/reference/vectors beside the checkout (as the project's shared
// folder is laid out), or KPTS_VECTORS_DIR.
import { fileURLToPath } from 'node:url';

export const VECTORS_DIR =
  process.env.KPTS_VECTORS_DIR ??
  fileURLToPath(new URL('../../../shared/reference/vectors', import.meta.url));
