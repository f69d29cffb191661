#!/usr/bin/env python3
# textcmp.py A.o[,A2.o...] B.o[,B2.o...] : compares the machine code (.text.<kernel> section bytes of the embedded
# sm_XX cubins) of every kernel present on both sides; prints counts, and kernels that differ.
import sys, struct, subprocess, tempfile
def cubins(path):
    with tempfile.NamedTemporaryFile() as t:
        subprocess.run(['objcopy','-O','binary','--only-section=.nv_fatbin',path,t.name],check=True)
        d=open(t.name,'rb').read()
    i=0
    while True:
        i=d.find(b'\x7fELF',i)
        if i<0: return
        shoff,=struct.unpack_from('<Q',d,i+0x28); shentsize,shnum,shstrndx=struct.unpack_from('<HHH',d,i+0x3a)
        end=i+shoff+shentsize*shnum
        yield d[i:end]; i=end
def texts(paths):
    out={}
    for p in paths.split(','):
        for e in cubins(p):
            shoff,=struct.unpack_from('<Q',e,0x28); shentsize,shnum,shstrndx=struct.unpack_from('<HHH',e,0x3a)
            hdr=[struct.unpack_from('<IIQQQQIIQQ',e,shoff+k*shentsize) for k in range(shnum)]
            so=hdr[shstrndx][4]
            for h in hdr:
                n=e[so+h[0]:e.index(b'\0',so+h[0])].decode()
                if n.startswith('.text.') or n.startswith('.nv.info.') or n.startswith('.nv.shared.') or n.startswith('.nv.constant0.'):
                    out.setdefault(n,[]).append(e[h[4]:h[4]+h[5]] if h[1]!=8 else b'nobits%d'%h[5])
    return out
a,b=texts(sys.argv[1]),texts(sys.argv[2])
common=[n for n in a if n in b]
same=[n for n in common if set(a[n])==set(b[n]) and len(set(a[n]))==1]
diff=[n for n in common if n not in same]
print(f"sections: A {len(a)}, B {len(b)}, common {len(common)}, identical {len(same)}, differing {len(diff)}")
print("kernels (.text) common:", sum(n.startswith('.text.') for n in common), "identical:", sum(n.startswith('.text.') for n in same))
for n in diff: print("DIFF", n)
