// The project's habit for commit messages: a subject of one line, at most 72 characters (the why
// goes in the body). Checked from 59e8eb9 on, where the habit became a rule; older subjects stay
// as they were written.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** The last commit before the rule: subjects after it are checked. */
const RULE_FROM = '59e8eb9';
const MAX_SUBJECT = 72;

const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** Why the subjects cannot be checked here (no git, not a clone, or a shallow one without RULE_FROM), or null. */
function unavailable(): string | null {
  try {
    git('cat-file', '-e', `${RULE_FROM}^{commit}`);
    return null;
  } catch {
    return `commit ${RULE_FROM} is not in this checkout's history (a shallow clone, or no git): commit subjects not checked`;
  }
}

const skipReason = unavailable();

describe('commit subjects', () => {
  it.skipIf(skipReason !== null)(
    `are one line of at most ${MAX_SUBJECT} characters from ${RULE_FROM} on${skipReason ? ` (skipped: ${skipReason})` : ''}`,
    () => {
      const subjects = git('log', '--format=%s', `${RULE_FROM}..HEAD`).split('\n').filter(Boolean);
      const long = subjects.filter((s) => [...s].length > MAX_SUBJECT);
      expect(long, `subjects longer than ${MAX_SUBJECT} characters: keep the subject short, say the rest in the body`).toEqual([]);
    },
  );
});
