/** A route's hook option (none, one or a list) as a list with `hook` added last. */
export function withHookAfter<T>(hooks: T | T[] | undefined, hook: T): T[] {
  if (hooks === undefined) return [hook];
  return [...(Array.isArray(hooks) ? hooks : [hooks]), hook];
}
