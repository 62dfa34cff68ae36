// Progress through the guided experiments, remembered in localStorage.
export interface LessonProgress {
  steps: number[]; // indexes of steps done
  answered: number | null; // option chosen at the quick check
  correct: boolean;
}

const KEY = 'vramlab.lessons.v1';

export function loadProgress(): Record<string, LessonProgress> {
  try {
    const raw = localStorage.getItem(KEY);
    const v = raw ? JSON.parse(raw) : {};
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

export function saveProgress(p: Record<string, LessonProgress>): void {
  try {
    localStorage.setItem(KEY, JSON.stringify(p));
  } catch {
    /* storage full or disabled: progress is a convenience */
  }
}

/** Splits text on `backticks` into plain and code parts (rendered without HTML). */
export function codeParts(text: string): Array<{ code: boolean; text: string }> {
  return text
    .split('`')
    .map((t, i) => ({ code: i % 2 === 1, text: t }))
    .filter((p) => p.text);
}
