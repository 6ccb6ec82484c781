// Preloaded (node --import) into a child process by peak-rss.ts: at exit, writes the process's
// peak resident set size (getrusage's ru_maxrss, in KiB on Linux) to the file PEAK_RSS_FILE names.
import { writeFileSync } from 'node:fs';

const file = process.env.PEAK_RSS_FILE;
if (file) process.on('exit', () => writeFileSync(file, String(process.resourceUsage().maxRSS)));
