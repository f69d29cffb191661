#!/usr/bin/env bash
# Copies this worktree to /work/main/.gpu/gd18 (DEVICE.md) with the objects built here (build.sh) xz'd under objs/.
set -eu
N=gd18; D=/work/main/.gpu/$N
rm -rf $D && mkdir -p $D/objs
git -C /work/wt/$N ls-files -co --exclude-standard | tar -C /work/wt/$N -cf - -T - | tar -C $D -xf -
for u in backward_phases.inst backward_phases_m0.inst delta.inst gated_delta.inst main gd18_backward16_test \
         gd18_backward16_test_m0 cg16_ab; do
  xz -T2 -3 -c /tmp/gd18/obj/$u.o > $D/objs/$u.o.xz; done
du -sh $D $D/objs
