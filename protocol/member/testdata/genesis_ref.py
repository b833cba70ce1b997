# Independent check of the genesis vault proof (docs/protocol/membership.md,
# "Genesis vault proof") on the first record of records.golden.
# Run from protocol/member: python3 testdata/genesis_ref.py
import hashlib
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

def item(b, i):
    """Returns (value, end) of the CBOR data item at b[i] (the subset used)."""
    mt, ai = b[i] >> 5, b[i] & 31
    if b[i] == 0xf6:
        return None, i + 1
    n, j = ai, i + 1
    if ai == 24: n, j = b[i+1], i + 2
    elif ai == 25: n, j = int.from_bytes(b[i+1:i+3], 'big'), i + 3
    elif ai == 26: n, j = int.from_bytes(b[i+1:i+5], 'big'), i + 5
    if mt == 0: return n, j
    if mt in (2, 3): return b[j:j+n], j + n
    if mt == 4:
        out = []
        for _ in range(n):
            v, j = item(b, j); out.append(v)
        return out, j
    raise ValueError('unsupported CBOR item %x' % b[i])

def encode_bytes(v):
    if v is None: return b'\xf6'
    return (bytes([0x58, len(v)]) if len(v) >= 24 else bytes([0x40 | len(v)])) + v

raw = bytes.fromhex(open('testdata/records.golden').readline().strip())
rec, end = item(raw, 0)
assert end == len(raw) and len(rec) == 16
vault, vkey, vsig, signer, sig = rec[1], rec[12], rec[13], rec[14], rec[15]
assert hashlib.sha256(b'weft/v1 vault-id' + vkey).digest() == vault, 'vault key does not name the vault'
# The encoding is canonical, so blanking a field is replacing its bytes.
i_vsig = raw.index(encode_bytes(vsig))
no_vsig = raw[:i_vsig] + b'\xf6' + raw[i_vsig + len(encode_bytes(vsig)):]
vault_msg = b'weft/member/v1 vault\0' + no_vsig[:-len(encode_bytes(sig))] + b'\xf6'
Ed25519PublicKey.from_public_bytes(vkey).verify(vsig, vault_msg)
dev_msg = b'weft/member/v1\0' + raw[:-len(encode_bytes(sig))] + b'\xf6'
Ed25519PublicKey.from_public_bytes(signer).verify(sig, dev_msg)
assert rec[5] == signer and rec[4] == 1 and rec[2] == 1
print('genesis vault proof and signature verify; vault', vault.hex())
