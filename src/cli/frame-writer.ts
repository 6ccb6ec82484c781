import { clearScreenDown, moveCursor } from 'node:readline';

/** What a FrameWriter writes to: stdout, or in tests any stream that says whether it is a terminal. */
export type FrameOutput = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/**
 * Where `status --watch` writes its rounds. A round is a frame (the state of the runs, which
 * replaces the one before) and new lines (log lines, kept as they come, above the frame). In
 * place, on a terminal, the cursor goes back up over the last frame and it is drawn again;
 * otherwise (a pipe, a file, `--json`) a frame is written only when it changed, so what is
 * written holds no copies.
 */
export class FrameWriter {
  private frame?: string;
  /** Terminal rows the last frame took, long lines wrapping. */
  private rows = 0;

  constructor(
    private readonly out: FrameOutput,
    private readonly inPlace = out.isTTY === true,
  ) {}

  write(frame: string, lines: readonly string[] = []): void {
    const changed = frame !== this.frame;
    if (!changed && lines.length === 0) return;
    if (this.inPlace && this.rows > 0) {
      moveCursor(this.out, 0, -this.rows);
      clearScreenDown(this.out);
    }
    const shown = this.inPlace || changed ? [...lines, frame] : lines;
    this.out.write(shown.map((l) => `${l}\n`).join(''));
    const width = this.out.columns || 80; // 0 when the terminal does not say
    this.rows = frame.split('\n').reduce((rows, l) => rows + Math.max(1, Math.ceil(l.length / width)), 0);
    this.frame = frame;
  }
}
