"""Put ``librocketmq.so`` where ``rocketmq-client-python`` 2.0.0 looks first (beside its ``ffi.py``).

The official 4.x Python SDK is ctypes over the C++ client and ships no library. The registry package
``rocketmq-python-cvs`` 2.1.0.3 (an sdist) carries a Linux x86-64 build at ``rocketmq/librocketmq.so``,
linking only libc, libstdc++, libm, libz and libpthread. This takes that one file from the sdist the
Makefile downloaded from the registry, checks its sha256 and installs it; a file with another hash is
refused with one line. Standard library only: it runs in the 4.x environment.

    .venv-4x/bin/python drivers/install_librocketmq.py SDIST SITE_PACKAGES
"""
from __future__ import annotations

import hashlib
import sys
import tarfile
from pathlib import Path

MEMBER = "rocketmq-python-cvs-2.1.0.3/rocketmq/librocketmq.so"
SHA256 = "ed3fce39f2b926637637a2b8b9122799f207b0cdf98dbd9110505bf43170fa30"


def install(sdist: Path, site_packages: Path) -> Path:
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(MEMBER)
        if member is None:
            raise SystemExit(f"install_librocketmq: {sdist} has no {MEMBER}")
        data = member.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"install_librocketmq: {MEMBER} has sha256 {digest}, expected {SHA256}; refused")
    target = site_packages / "rocketmq" / "librocketmq.so"
    if not target.parent.is_dir():
        raise SystemExit(f"install_librocketmq: {target.parent} is missing; install rocketmq-client-python==2.0.0 first")
    target.write_bytes(data)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(f"install_librocketmq: installed {install(Path(sys.argv[1]), Path(sys.argv[2]))} (sha256 {SHA256[:12]}…)")
