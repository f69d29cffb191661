#!/usr/bin/env bash
# Copies this worktree to /work/main/.gpu/add18 (DEVICE.md) with build_local.sh's objects xz'd under objs/.
set -eu
N=add18; D=/work/main/.gpu/$N
rm -rf $D && mkdir -p $D/objs
git -C /work/wt/$N ls-files -co --exclude-standard | tar -C /work/wt/$N -cf - -T - | tar -C $D -xf -
for u in backward_phases.inst additive.inst simple_gla.inst main add18_backward16_test add16_ab; do
  xz -T2 -3 -c /tmp/add18/obj/$u.o > $D/objs/$u.o.xz; done
du -sh $D $D/objs
