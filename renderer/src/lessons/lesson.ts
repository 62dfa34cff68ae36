// What a lesson is: the types every lesson file writes to (lessons.ts gathers the lessons).
import type { SpecInput } from '$contract/spec';

export type LessonAction =
  | { kind: 'experiment'; spec: SpecInput; label: string }
  | { kind: 'playground'; commands: string[]; label: string; capacity?: string; allocConf?: string };

export interface LessonStep {
  text: string;
  action?: LessonAction;
}

export interface QuickCheck {
  question: string;
  options: string[];
  answer: number; // index into options
  explanation: string;
}

export interface Lesson {
  id: string;
  title: string;
  goal: string;
  steps: LessonStep[];
  look: string[];
  check: QuickCheck;
}
