#!/bin/bash
# Usage: check_avx2_weak_symbols.sh LIBRARY.a
#
# The AVX2 paths are whole translation units compiled under
# `#pragma GCC target("avx2")` (the members whose names contain "avx2").
# A weak symbol such a unit defines (an inline function or template that
# was not inlined) is shared with every other unit that defines it, and the
# linker keeps one copy: if that copy is AVX2 code, the scalar path runs it
# too, and a CPU without AVX2 stops on an illegal instruction. So: no weak
# symbol of an AVX2 unit, other than the AVX2 kernels themselves (Avx2Ops,
# only reached after the CPU check), may hold a VEX instruction.
set -euo pipefail

lib=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# The member list is read once: under pipefail, `ar t | grep -q` can fail when
# grep exits on its match while ar is still writing (SIGPIPE).
all_members=$(ar t "$lib")
members=$(grep avx2 <<<"$all_members" || true)
if [ -z "$members" ]; then
  echo "no AVX2 members in $lib (a build without the AVX2 path): nothing to check"
  exit 0
fi

# A build for an AVX target as a whole (-march=x86-64-v3, native, ...) has
# VEX code everywhere, and no scalar path to protect.
if grep -qx poisson.cc.o <<<"$all_members"; then
  ar x "$lib" poisson.cc.o
  if objdump -d --no-show-raw-insn poisson.cc.o |
      awk -F'\t' 'NF >= 2 && $2 ~ /^v[a-z]/ {found = 1} END {exit !found}'; then
    echo "the baseline unit poisson.cc.o holds VEX code (an AVX build): skipped"
    exit 0
  fi
fi

failed=0
checked=0
for member in $members; do
  ar x "$lib" "$member"
  # One disassembly of the member, counted per function: objdump
  # --disassemble=SYMBOL reads the whole object again for each symbol, and
  # a debug build's unit has about a thousand weak symbols (20 minutes).
  # Without raw bytes, the instruction is the second tab-separated field of
  # objdump's lines; a function starts at "ADDRESS <SYMBOL>:".
  objdump -d --no-show-raw-insn "$member" |
    awk -F'\t' '
      /^[0-9a-f]+ <.*>:$/ {
        symbol = substr($0, index($0, "<") + 1)
        symbol = substr(symbol, 1, length(symbol) - 2)
        next
      }
      NF >= 2 && $2 ~ /^v[a-z]/ { vex[symbol]++ }
      END { for (s in vex) print s, vex[s] }' >vex_counts
  while read -r symbol; do
    demangled=$(c++filt "$symbol")
    case "$demangled" in
      *Avx2Ops::*) continue ;;
    esac
    checked=$((checked + 1))
    vex=$(awk -v s="$symbol" '$1 == s {print $2}' vex_counts)
    if [ "${vex:-0}" -gt 0 ]; then
      echo "FAIL: $member defines weak $demangled with $vex VEX instructions"
      failed=1
    fi
  done < <(nm --defined-only "$member" | awk '$2 == "W" {print $3}')
done
echo "checked $checked weak symbols of:" $members
exit $failed
