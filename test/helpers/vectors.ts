// Where upstream's test vectors live: test/fixtures/upstream/ in this repository (origin in its README).
import { fileURLToPath } from 'node:url';

export const VECTORS_DIR = fileURLToPath(new URL('../fixtures/upstream', import.meta.url));
