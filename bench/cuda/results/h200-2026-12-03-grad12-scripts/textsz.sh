#!/bin/bash
readelf -S -W $1 | grep -E '\.text\.' | while read -r line; do
  set -- $(echo "$line" | sed 's/^ *\[ *[0-9]*\] *//'); n=$1; sz=$((16#$5)); echo "$sz bytes $((sz/16)) instr $n" | c++filt; done
