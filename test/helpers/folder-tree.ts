import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Everything below `dir`, byte for byte: each file's path (relative, `/`-separated) with the sha256
 * of its content, and each folder's path ending in `/`, so an emptied or added folder shows too.
 */
export async function folderTree(dir: string, below = ''): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  for (const entry of await readdir(join(dir, below), { withFileTypes: true })) {
    const name = below === '' ? entry.name : `${below}/${entry.name}`;
    if (entry.isDirectory()) Object.assign(tree, { [`${name}/`]: 'folder' }, await folderTree(dir, name));
    else
      tree[name] = createHash('sha256')
        .update(await readFile(join(dir, name)))
        .digest('hex');
  }
  return tree;
}
