#!/usr/bin/env python3
# kernels.py OBJ... : prints "<text bytes> <kernel mangled name>" of every kernel (.text.<name> section) in the
# sm_XX cubins embedded in each object's .nv_fatbin (uncompressed fatbins only).
import sys, struct, subprocess, tempfile, os
def cubins(path):
    with tempfile.NamedTemporaryFile() as t:
        subprocess.run(['objcopy','-O','binary','--only-section=.nv_fatbin',path,t.name],check=True)
        d=open(t.name,'rb').read()
    i=0
    while True:
        i=d.find(b'\x7fELF',i)
        if i<0: return
        # ELF64 header: section header offset/size/count
        shoff,=struct.unpack_from('<Q',d,i+0x28); shentsize,shnum,shstrndx=struct.unpack_from('<HHH',d,i+0x3a)
        end=i+shoff+shentsize*shnum
        yield d[i:end]; i=end
def sections(e):
    shoff,=struct.unpack_from('<Q',e,0x28); shentsize,shnum,shstrndx=struct.unpack_from('<HHH',e,0x3a)
    hdr=[struct.unpack_from('<IIQQQQIIQQ',e,shoff+k*shentsize) for k in range(shnum)]
    so=hdr[shstrndx][4]
    for h in hdr:
        n=e[so+h[0]:e.index(b'\0',so+h[0])].decode()
        yield n,h[5]
for p in sys.argv[1:]:
    for e in cubins(p):
        for n,sz in sections(e):
            if n.startswith('.text.'): print(sz, n[6:], p)
