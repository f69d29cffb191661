#!/usr/bin/env bash
# the remaining rule units (build_dev.sh's loop, split in two queues): $@ the rules, in order
set -u
R=/work/wt/py5; D=/work/main/.gpu/deps; NB=/tmp/py5/nanobind; O=/tmp/py5/dev/obj
PYINC=/root/.pyenv/versions/3.12.1/include/python3.12
CX="g++ -std=c++20 -DNDEBUG -fPIC -march=x86-64-v3 -fvisibility=hidden -fno-strict-aliasing -I$R/include -I$D -I$D/eigen3 -isystem $PYINC -I$NB/include -I$NB/ext/robin_map/include"
for r in "$@"; do t0=$(date +%s); nice $CX -O1 -DLINEA_PYTHON_HAS_CUDA -c $R/python/src/rules/$r.cpp -o $O/rule_$r.o || echo "FAILED $r"; echo "$(( $(date +%s) - t0 )) s: $r"; done
