// The field descriptions every catalogue entry is written in: type, range, default, unit
// and meaning. The contract's validation, the panel's inputs, the CSV columns and the CLI
// help are all read off these, so a field is described once.
export interface FieldBase {
  /** A short label for forms and tables. */
  label: string;
  /** One sentence: what the field means, in PyTorch's terms. */
  meaning: string;
  unit?: string;
}

export interface IntField extends FieldBase {
  type: 'int';
  min: number;
  max: number;
  default: number;
  /** The default is this other field's value (llama's kv_heads defaults to heads). */
  defaultFrom?: string;
}

export interface NumberField extends FieldBase {
  type: 'number';
  min: number;
  max: number;
  /** min itself is not allowed (a learning rate must be > 0). */
  minExclusive?: boolean;
  /** max itself is not allowed (momentum must be < 1). */
  maxExclusive?: boolean;
  default: number;
}

export interface BoolField extends FieldBase {
  type: 'bool';
  default: boolean;
}

export interface EnumOption<V extends string = string> {
  value: V;
  label: string;
}

export interface EnumField<V extends string = string> extends FieldBase {
  type: 'enum';
  options: readonly EnumOption<V>[];
  default: V;
}

export type Field = IntField | NumberField | BoolField | EnumField;
export type Fields = Readonly<Record<string, Field>>;

/** The value type a field holds. */
export type ValueOf<F extends Field> = F extends BoolField ? boolean : F extends EnumField<infer V> ? V : number;
/** The object a set of fields describes, every field present. */
export type ArgsOf<F extends Fields> = { -readonly [K in keyof F]: ValueOf<F[K]> };

/** The allowed values or range of a field, as every rejection states it. */
export function allowedText(f: Field): string {
  switch (f.type) {
    case 'int':
      return `an integer from ${f.min} to ${f.max}`;
    case 'number':
      return `a number ${f.minExclusive ? '>' : '>='} ${f.min} and ${f.maxExclusive ? '<' : '<='} ${f.max}`;
    case 'bool':
      return 'true or false';
    case 'enum':
      return `one of ${f.options.map((o) => `"${o.value}"`).join(', ')}`;
  }
}

/** Whether a value is allowed by the field alone (cross-field rules come on top). */
export function fieldAccepts(f: Field, v: unknown): boolean {
  switch (f.type) {
    case 'int':
      return typeof v === 'number' && Number.isInteger(v) && v >= f.min && v <= f.max;
    case 'number':
      return (
        typeof v === 'number' &&
        Number.isFinite(v) &&
        (f.minExclusive ? v > f.min : v >= f.min) &&
        (f.maxExclusive ? v < f.max : v <= f.max)
      );
    case 'bool':
      return typeof v === 'boolean';
    case 'enum':
      return typeof v === 'string' && f.options.some((o) => o.value === v);
  }
}

/** Every field's default; a defaultFrom field takes the other field's (given or default) value. */
export function fillFields<F extends Fields>(fields: F, given: Readonly<Record<string, unknown>>): ArgsOf<F> {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(fields)) out[k] = given[k] ?? (f.type === 'int' && f.defaultFrom ? undefined : f.default);
  for (const [k, f] of Object.entries(fields)) if (out[k] === undefined && f.type === 'int' && f.defaultFrom) out[k] = out[f.defaultFrom];
  return out as ArgsOf<F>;
}
