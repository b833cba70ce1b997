# Independent reference for weft's sealed epoch secrets (protocol/keys/seal.go).
import hashlib, struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

p = 2**255 - 19
def ed_pub(seed):
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
def to_x(pub):
    y = int.from_bytes(pub, 'little') & ((1 << 255) - 1)
    u = (1 + y) * pow(1 - y, p - 2, p) % p
    return u.to_bytes(32, 'little')
def x_priv(seed):
    h = bytearray(hashlib.sha512(seed).digest()[:32])
    h[0] &= 248; h[31] &= 127; h[31] |= 64
    return bytes(h)
def rotl(v, n): return ((v << n) & 0xffffffff) | (v >> (32 - n))
def qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = rotl(s[b] ^ s[c], 7)
def hchacha20(key, nonce16):
    s = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] + list(struct.unpack('<8I', key)) + list(struct.unpack('<4I', nonce16))
    for _ in range(10):
        qr(s, 0, 4, 8, 12); qr(s, 1, 5, 9, 13); qr(s, 2, 6, 10, 14); qr(s, 3, 7, 11, 15)
        qr(s, 0, 5, 10, 15); qr(s, 1, 6, 11, 12); qr(s, 2, 7, 8, 13); qr(s, 3, 4, 9, 14)
    return struct.pack('<8I', *(s[0:4] + s[12:16]))
def xchacha_seal(key, nonce24, plain, ad=b''):
    sub = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(sub).encrypt(b'\0\0\0\0' + nonce24[16:], plain, ad or None)

def seal(eph, to_seed, vault, epoch, secret):
    to = ed_pub(to_seed)
    tox = to_x(to)
    ek = X25519PrivateKey.from_private_bytes(eph)
    ephpub = ek.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    shared = ek.exchange(X25519PublicKey.from_public_bytes(tox))
    info = b'weft/v1 epoch-secret' + vault + struct.pack('>I', epoch) + to + ephpub + tox
    okm = HKDF(algorithm=hashes.SHA256(), length=56, salt=None, info=info).derive(shared)
    return ephpub + xchacha_seal(okm[:32], okm[32:], secret)

# RFC 8032 section 7.1 test 1 key.
s1 = bytes.fromhex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60')
assert ed_pub(s1).hex() == 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a'
print('rfc8032-1 x25519 public', to_x(ed_pub(s1)).hex())
print('rfc8032-1 x25519 private', x_priv(s1).hex())
# cross-check: X25519(priv, 9) == converted public
xp = X25519PrivateKey.from_private_bytes(x_priv(s1)).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
assert xp == to_x(ed_pub(s1))
seed = bytes([7]) * 32
vault = bytes(range(1, 33))
secret = bytes(range(0x40, 0x60))
eph = bytes([0x11]) * 32
print('seed7 x25519 public', to_x(ed_pub(seed)).hex())
print('sealed seed7 epoch3', seal(eph, seed, vault, 3, secret).hex())
# RFC 7748 6.1: Alice's private key and public key
a = bytes.fromhex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a')
print('rfc7748 alice pub', X25519PrivateKey.from_private_bytes(a).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex())
