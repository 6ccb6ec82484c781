#!/usr/bin/env bash
# Makes the project's own MindsDB for the real-server suite: a virtual environment in .mindsdb/venv
# (ignored by git) holding exactly the packages test/mindsdb/requirements.txt pins, by hash, from PyPI.
# Nothing goes into the system's Python. Run again, it does nothing unless the requirements changed.
#
#   bash scripts/mindsdb-env.sh          install (or check) the environment
#   bash scripts/mindsdb-env.sh --lock   rewrite the requirements from a fresh resolution of the
#                                        MindsDB release named in it (then install)
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=test/mindsdb/requirements.txt
venv=.mindsdb/venv
stamp="$venv/.requirements.sha256"
python=${PYTHON:-python3}

if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
  echo "scripts/mindsdb-env.sh: needs CPython 3.11 as '$python' (the pinned wheels are for 3.11); set PYTHON to one" >&2
  exit 1
fi

if [ "${1:-}" = "--lock" ]; then
  release=$(grep -m1 -o '^mindsdb==[^ ]*' "$requirements")
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  "$python" -m venv "$scratch/venv"
  "$scratch/venv/bin/pip" install --quiet --dry-run --ignore-installed --report "$scratch/report.json" "$release" 2>&1 | grep -v '^WARNING: Location' || true
  "$python" - "$scratch/report.json" "$requirements" <<'EOF'
import json, sys
report, path = sys.argv[1], sys.argv[2]
header = [line for line in open(path) if line.startswith('#')]
pins = []
for item in json.load(open(report))['install']:
    archive = item['download_info']['archive_info']
    digest = archive.get('hashes', {}).get('sha256') or archive['hash'].split('=', 1)[1]
    pins.append(f"{item['metadata']['name'].lower()}=={item['metadata']['version']} \\\n    --hash=sha256:{digest}\n")
open(path, 'w').write(''.join(header) + ''.join(sorted(pins)))
EOF
  echo "rewrote $requirements"
fi

want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "MindsDB environment is up to date ($venv)"
  exit 0
fi

started=$(date +%s)
rm -rf "$venv"
"$python" -m venv "$venv"
# The machine's own pip settings may list local wheel folders; pip prints a warning for each
# folder that lacks a package, which buries real errors.
set +e
# --no-deps: the file pins the whole resolved set (pip check below proves it complete); hash mode
# would otherwise refuse a dependency asked for with extras, such as pydantic[email].
"$venv/bin/pip" install --quiet --require-hashes --no-deps -r "$requirements" 2>&1 | grep -v '^WARNING: Location'
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ] || ! "$venv/bin/pip" check >&2 || ! "$venv/bin/python" -c 'import mindsdb.integrations.handlers.byom_handler'; then
  echo "scripts/mindsdb-env.sh: MindsDB did not install into $venv (pip's output is above)" >&2
  exit 1
fi
echo "$want" >"$stamp"
echo "MindsDB $("$venv/bin/python" -c 'import mindsdb; print(mindsdb.__version__)') installed into $venv in $(($(date +%s) - started)) s"
