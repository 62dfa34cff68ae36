// Walks the catalogue: for every model family and every optimizer, each field validates
// (default accepted, out of range refused naming the field), renders as an input in the
// experiment panel, and exports as a CSV column, with no per-family code in between.
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/svelte';
import ExperimentPanel from '../../renderer/src/panels/ExperimentPanel.svelte';
import { chooseFamily, chooseOptimizer, defaultForm, formToSpec, specToForm } from '../../renderer/src/lib/specForm';
import { families, optimizers, type Field } from '../../main/contract/catalogue';
import { checkSpec, parseSpec } from '../../main/contract/spec';
import { SPEC_COLUMNS, specColumns } from '../../main/export/spec_columns';
import { reactive } from './reactive.svelte';

afterEach(() => cleanup());

/** A value the field refuses (just past its range, or the wrong type). */
function outOfRange(f: Field): unknown {
  if (f.type === 'int') return f.max + 1;
  if (f.type === 'number') return f.max * 2 + 1;
  if (f.type === 'bool') return 'yes';
  return 'no-such-option';
}

describe('catalogue walk', () => {
  for (const fam of families()) {
    describe(`family ${fam.kind}`, () => {
      it('validates every field: its default, each preset, and a value out of range naming the field', () => {
        const spec = parseSpec({ model: { kind: fam.kind } });
        for (const [k, f] of Object.entries(fam.fields)) {
          expect((spec.model as unknown as Record<string, unknown>)[k], k).toBe(
            f.type === 'int' && f.defaultFrom ? (spec.model as unknown as Record<string, unknown>)[f.defaultFrom] : f.default,
          );
          const r = checkSpec({ model: { kind: fam.kind, [k]: outOfRange(f) } });
          expect(r.ok, k).toBe(false);
          if (!r.ok)
            expect(
              r.issues.some((i) => i.startsWith(`model.${k}: must be`)),
              r.issues.join('; '),
            ).toBe(true);
        }
        for (const p of fam.presets) expect(checkSpec({ model: { kind: fam.kind, ...p.model, ...p.nested } }).ok, p.id).toBe(true);
        for (const [k, v] of Object.entries(fam.specDefaults)) expect((spec as unknown as Record<string, unknown>)[k]).toBe(v);
      });

      it('renders every field in the panel, and the form round-trips to the spec', async () => {
        const form = reactive(defaultForm());
        chooseFamily(form, fam.kind);
        render(ExperimentPanel, { props: { form } });
        expect((screen.getByTestId('field-modelKind') as HTMLSelectElement).value).toBe(fam.kind);
        for (const [k, f] of Object.entries(fam.fields)) {
          const input = screen.getByTestId(`field-${k}`) as HTMLInputElement;
          expect(input.closest('label')!.textContent).toContain(f.label);
          expect(input.value).toBe(String(form[k]));
        }
        const r = formToSpec(form);
        expect(r.errors).toEqual({});
        expect(parseSpec(r.spec).model).toEqual(parseSpec({ model: { kind: fam.kind } }).model);
        expect(formToSpec(specToForm(r.spec!)).spec).toEqual(r.spec);
        // Every preset is offered and fills the fields.
        if (fam.presets.length) {
          const select = screen.getByTestId('field-preset') as HTMLSelectElement;
          for (const p of fam.presets) {
            await fireEvent.change(select, { target: { value: p.id } });
            for (const [k, v] of Object.entries(p.model))
              expect((screen.getByTestId(`field-${k}`) as HTMLInputElement).value).toBe(String(v));
          }
        }
      });

      it('exports every field as a CSV column', () => {
        const spec = parseSpec({ model: { kind: fam.kind } });
        const row = specColumns(spec);
        expect(row.model).toBe(fam.kind);
        for (const k of Object.keys(fam.fields)) {
          expect(SPEC_COLUMNS).toContain(`model_${k}`);
          expect(row[`model_${k}`]).toBe((spec.model as unknown as Record<string, unknown>)[k]);
        }
      });
    });
  }

  for (const o of optimizers()) {
    it(`optimizer ${o.kind}: validates, renders and exports every argument`, async () => {
      const spec = parseSpec({ optimizer: o.kind });
      expect(spec.optimizer).toEqual({ kind: o.kind, ...Object.fromEntries(Object.entries(o.fields).map(([k, f]) => [k, f.default])) });
      for (const [k, f] of Object.entries(o.fields)) {
        const r = checkSpec({ optimizer: { kind: o.kind, [k]: outOfRange(f) } });
        expect(r.ok, k).toBe(false);
        if (!r.ok) expect(r.issues[0].startsWith(`optimizer.${k}: must be`), r.issues[0]).toBe(true);
      }
      const form = reactive(defaultForm());
      chooseOptimizer(form, o.kind);
      render(ExperimentPanel, { props: { form } });
      expect((screen.getByTestId('field-optimizer') as HTMLSelectElement).value).toBe(o.kind);
      for (const [k, f] of Object.entries(o.fields)) {
        const input = screen.getByTestId(`field-optimizer_${k}`) as HTMLInputElement;
        expect(input.closest('label')!.textContent).toContain(f.label);
      }
      const row = specColumns(spec);
      for (const k of Object.keys(o.fields)) expect(row[`optimizer_${k}`]).toBe((spec.optimizer as unknown as Record<string, unknown>)[k]);
      expect(parseSpec(formToSpec(form).spec).optimizer).toEqual(spec.optimizer);
    });
  }
});
