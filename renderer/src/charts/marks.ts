// A chart.js plugin that draws what a memory timeline needs around its lines: phase bands
// and the card's CUDA context band behind, then the capacity line, the peak and the OOM in
// front. One plugin instance serves every chart; each chart's data is set with setMarks, not
// through chart.js options: the options resolver wraps every nested object it meets in
// proxies on each update, and a run's series is one with 100k-point arrays (a live redraw
// spent a sixth of its time there).
import type { Chart, Plugin } from 'chart.js';
import { CONTEXT_LABEL, type CardMemory } from '$contract/card';
import { formatBytes } from '../lib/units';
import { PHASE_COLORS, type RunSeries } from '../lib/series';

/** Where each chart last drew the context band (pixels, top < bottom), null when off the scale. */
export const drawnBands = new WeakMap<Chart, { top: number; bottom: number } | null>();

export interface MarksOptions {
  series?: RunSeries | null;
  capacity?: number | null;
  /** The card: its CUDA context is drawn as a constant band from total - context up to total. */
  card?: CardMemory | null;
  colors?: { fg: string; danger: string; accent: string; muted: string; context?: { fill: string; stripe: string; text: string } };
  /** A vertical cursor (segment-map scrub position), in x units. */
  cursor?: number | null;
}

const marks = new WeakMap<Chart, MarksOptions>();

/** What the plugin draws on `chart` from its next draw on. */
export function setMarks(chart: Chart, o: MarksOptions): void {
  marks.set(chart, o);
}

function opts(chart: Chart): MarksOptions {
  return marks.get(chart) ?? {};
}

export const marksPlugin: Plugin = {
  id: 'marks',
  beforeDatasetsDraw(chart) {
    const o = opts(chart);
    drawPhases(chart, o);
    drawContextBand(chart, o);
  },
  afterDatasetsDraw(chart) {
    const o = opts(chart);
    const c = o.colors ?? { fg: '#222', danger: '#b42318', accent: '#6d28d9', muted: '#666' };
    const { ctx, chartArea: area, scales } = chart;
    const x = scales.x;
    const y = scales.y;
    ctx.save();
    ctx.font = '12px system-ui, sans-serif';
    if (o.capacity && o.capacity <= y.max * 1.0001) {
      const py = y.getPixelForValue(o.capacity);
      ctx.strokeStyle = c.danger;
      ctx.setLineDash([6, 4]);
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(area.left, py);
      ctx.lineTo(area.right, py);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = c.danger;
      ctx.textAlign = 'left';
      ctx.fillText(`capacity ${formatBytes(o.capacity)}`, area.left + 6, py - 4);
    }
    const s = o.series;
    const oomX = s?.oom ? Math.min(area.right, Math.max(area.left, x.getPixelForValue(s.oom.x))) : null;
    if (s?.peak && s.peak.x >= x.min && s.peak.x <= x.max) {
      const px = x.getPixelForValue(s.peak.x);
      const py = y.getPixelForValue(s.peak.y);
      ctx.fillStyle = c.accent;
      ctx.beginPath();
      ctx.arc(px, py, 4, 0, Math.PI * 2);
      ctx.fill();
      const label = `peak ${formatBytes(s.peak.y)}`;
      ctx.textAlign = px > (area.left + area.right) / 2 ? 'right' : 'left';
      // The OOM label sits at the top: a peak label that would meet it goes below its point.
      const width = ctx.measureText(label).width + 16;
      const above = Math.max(area.top + 12, py - 8);
      const clash = oomX !== null && above < area.top + 34 && Math.abs(oomX - px) < width + 40;
      ctx.fillText(
        label,
        px + (ctx.textAlign === 'right' ? -8 : 8),
        clash ? Math.min(area.bottom - 4, Math.max(py + 18, area.top + 34)) : above,
      );
    }
    if (s?.oom && oomX !== null) {
      const px = oomX;
      ctx.strokeStyle = c.danger;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(px, area.top);
      ctx.lineTo(px, area.bottom);
      ctx.stroke();
      ctx.fillStyle = c.danger;
      ctx.textAlign = px > (area.left + area.right) / 2 ? 'right' : 'left';
      ctx.fillText('OOM', px + (ctx.textAlign === 'right' ? -6 : 6), area.top + 14);
    }
    if (o.cursor !== null && o.cursor !== undefined && o.cursor >= x.min && o.cursor <= x.max) {
      const px = x.getPixelForValue(o.cursor);
      ctx.strokeStyle = c.fg;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(px, area.top);
      ctx.lineTo(px, area.bottom);
      ctx.stroke();
    }
    ctx.restore();
  },
};

/** The memory PyTorch never sees, where it sits on the card: reserved can grow up to its
 *  bottom edge (total - context); reserved + context reaches the total at its top. */
function drawContextBand(chart: Chart, o: MarksOptions): void {
  const card = o.card;
  const y = chart.scales.y;
  const area = chart.chartArea;
  if (!card || card.context <= 0 || !y || card.total - card.context >= y.max) {
    drawnBands.set(chart, null);
    return;
  }
  const c = o.colors?.context ?? { fill: 'rgba(77, 124, 15, 0.12)', stripe: 'rgba(77, 124, 15, 0.45)', text: '#3f6212' };
  const top = Math.max(area.top, y.getPixelForValue(card.total));
  const bottom = Math.min(area.bottom, y.getPixelForValue(card.total - card.context));
  const { ctx } = chart;
  ctx.save();
  ctx.beginPath();
  ctx.rect(area.left, top, area.right - area.left, Math.max(bottom - top, 1));
  ctx.clip();
  ctx.fillStyle = c.fill;
  ctx.fillRect(area.left, top, area.right - area.left, Math.max(bottom - top, 1));
  // Diagonal stripes: a band, not a series, whatever the colours around it.
  ctx.strokeStyle = c.stripe;
  ctx.lineWidth = 1;
  ctx.beginPath();
  const h = bottom - top;
  for (let x = area.left - h; x < area.right; x += 8) {
    ctx.moveTo(x, bottom);
    ctx.lineTo(x + h, top);
  }
  ctx.stroke();
  ctx.restore();
  ctx.save();
  ctx.font = '12px system-ui, sans-serif';
  ctx.fillStyle = c.text;
  ctx.textAlign = 'left'; // left, under the band: the peak's label sits on the right
  ctx.fillText(`${CONTEXT_LABEL} ${formatBytes(card.context)}`, area.left + 6, Math.min(area.bottom - 4, bottom + 14));
  ctx.restore();
  drawnBands.set(chart, { top, bottom });
}

/** Phase bands (forward, backward, step...) behind everything. */
function drawPhases(chart: Chart, o: MarksOptions): void {
  const s = o.series;
  if (!s || !s.phases.length) return;
  const { ctx, chartArea: area, scales } = chart;
  const x = scales.x;
  const min = x.min;
  const max = x.max;
  const last = s.lastX();
  ctx.save();
  ctx.beginPath();
  ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top);
  ctx.clip();
  for (const p of s.phases) {
    const end = Number.isNaN(p.end) ? last : p.end;
    if (end < min || p.start > max) continue;
    const color = PHASE_COLORS[p.name];
    if (!color) continue;
    const x0 = x.getPixelForValue(p.start);
    const x1 = x.getPixelForValue(end);
    // Phases squeezed into one instant (samples merged under backpressure) would stack into a dark line.
    if (x1 - x0 < 0.5) continue;
    ctx.fillStyle = color;
    ctx.fillRect(x0, area.top, x1 - x0, area.bottom - area.top);
  }
  ctx.restore();
}
