# Independent reference for weft's vault key and vault ID
# (protocol/keys/vaultkey.go, docs/protocol/keys.md). Run: python3 vaultkey_ref.py
import hashlib, hmac
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization

def hkdf32(ikm, info):
    # RFC 5869 with SHA-256, no salt (a zero-filled salt of hash length), L = 32.
    prk = hmac.new(b'\0' * 32, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b'\x01', hashlib.sha256).digest()

def ed_pub(seed):
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)

# The ed25519 implementation agrees with RFC 8032 section 7.1, test 1.
assert ed_pub(bytes.fromhex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60')).hex() == \
    'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a'

root = bytes(range(32))
seed = hkdf32(root, b'weft/v1 vault-key')
pub = ed_pub(seed)
vid = hashlib.sha256(b'weft/v1 vault-id' + pub).digest()
sig = Ed25519PrivateKey.from_private_bytes(seed).sign(b'weft')
print('vault-key-seed', seed.hex())
print('vault-public  ', pub.hex())
print('vault-id      ', vid.hex())
print('sig("weft")   ', sig.hex())
print('rendezvous    ', hkdf32(root, b'weft/v1 rendezvous').hex())
