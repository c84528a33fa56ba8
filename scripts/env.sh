# Sourced by the project's scripts: a Node.js that setup.sh installed under .tools/ (when the machine's own is
# older than 20) goes first on PATH.
_kpts_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -x "$_kpts_root/.tools/node/node_modules/node/bin/node" ]; then
  PATH="$_kpts_root/.tools/node/node_modules/node/bin:$PATH"
  export PATH
fi
unset _kpts_root
