// chart.js with only the parts the lab uses, registered once. No animation anywhere:
// live charts redraw on every frame and must stay cheap.
import {
  Chart,
  CategoryScale,
  Decimation,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  ScatterController,
  Tooltip,
  BarController,
  BarElement,
} from 'chart.js';
import zoomPlugin from 'chartjs-plugin-zoom';
import { marksPlugin } from './marks';

let done = false;
export function setupCharts(): typeof Chart {
  if (!done) {
    Chart.register(
      LineController,
      ScatterController,
      BarController,
      LineElement,
      PointElement,
      BarElement,
      LinearScale,
      CategoryScale,
      Decimation,
      Filler,
      Legend,
      Tooltip,
      zoomPlugin,
      marksPlugin,
    );
    Chart.defaults.animation = false;
    Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    done = true;
  }
  return Chart;
}
