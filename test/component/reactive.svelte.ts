// A deeply reactive copy of a plain object, as a parent component's $state would hand down.
export function reactive<T extends object>(value: T): T {
  const s = $state(value);
  return s;
}
