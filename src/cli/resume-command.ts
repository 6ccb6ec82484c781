/**
 * The command that resumes a run: the arguments it was started with, quoted as a shell reads
 * them, and `--run-id` when the id was chosen for it. The same options ask for the same run.
 */
export function resumeCommand(args: readonly string[], runId: string): string {
  const named = args.some((a) => a === '--run-id' || a.startsWith('--run-id='));
  return ['batch-scorer', ...args, ...(named ? [] : ['--run-id', runId])].map(shellWord).join(' ');
}

/** A word a POSIX shell reads back as it is: bare when it holds nothing special, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
