#!/bin/sh
# readme_block.sh README EXAMPLE: the C block of the README that follows the "c-example" marker
# is EXAMPLE (tests/readme_example.c, compiled and run by the test readme_example) without its
# first line, the file's one-line comment; so the README shows code that is tested.
readme=$1
example=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
awk '/<!-- c-example/ { m = 1; next } m == 1 && /^```c/ { m = 2; next } m == 2 && /^```/ { exit }
     m == 2 { print }' "$readme" >"$tmp/block.c"
tail -n +2 "$example" >"$tmp/example.c"
if [ ! -s "$tmp/block.c" ]; then
  echo "readme_c_block: no C block after a c-example marker in $readme"
  exit 1
fi
if ! cmp -s "$tmp/block.c" "$tmp/example.c"; then
  echo "readme_c_block: the README's C block differs from $example:"
  diff "$tmp/example.c" "$tmp/block.c"
  exit 1
fi
echo "readme_c_block: the README's C block is $example ($(wc -l <"$tmp/block.c") lines)"
