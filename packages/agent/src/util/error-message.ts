// What a caught value says: an Error's message, else the value as text (a library may throw a string).
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
