"""Mounting a session's disk image on a loop device, in this process.

``mount -o loop`` is a process of its own (some 3 ms, and in the server twice
that: an asynchronous child, and a thread to wait for it) on every session's
start, and ``umount`` another on its end. Here the same is done with the
kernel's calls, in about 0.5 ms: a free loop device (``/dev/loop-control``),
the image attached to it with ``LOOP_CONFIGURE`` and ``LO_FLAGS_AUTOCLEAR`` (so
the device is released with the last user of the filesystem, as ``mount -o
loop`` asks too), then ``mount(2)``. Blocking: call them from a worker thread.

Linux only (``LOOP_CONFIGURE`` is Linux 5.8); any failure is an ``OSError``,
and the caller falls back to ``mount(8)``.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import struct
from pathlib import Path

__all__ = ["mount_image", "unmount"]

_LOOP_CTL_GET_FREE = 0x4C82
_LOOP_CONFIGURE = 0x4C0A
_LO_FLAGS_AUTOCLEAR = 4
#: ``struct loop_info64``: its size, where ``lo_flags`` and ``lo_file_name`` are.
_INFO_SIZE, _FLAGS_AT, _NAME_AT, _NAME_SIZE = 232, 52, 56, 64
_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH, _UMOUNT_NOFOLLOW = 2, 8
#: Free devices that another process took first, before this one gives up.
_ATTEMPTS = 8


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
    libc.mount.argtypes += [ctypes.c_ulong, ctypes.c_void_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def _raise_errno(what: str) -> None:
    errno = ctypes.get_errno()
    raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _config(image_fd: int, image: Path) -> bytes:
    info = bytearray(_INFO_SIZE)
    struct.pack_into("I", info, _FLAGS_AT, _LO_FLAGS_AUTOCLEAR)
    name = os.fsencode(image)[: _NAME_SIZE - 1]
    info[_NAME_AT : _NAME_AT + len(name)] = name
    return struct.pack("II", image_fd, 0) + bytes(info) + bytes(64)  # reserved[8]


def _attach(image_fd: int, image: Path) -> tuple[int, str]:
    """A loop device with ``image`` on it: its open descriptor and its path."""
    for _ in range(_ATTEMPTS):
        control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            number = fcntl.ioctl(control, _LOOP_CTL_GET_FREE)
        finally:
            os.close(control)
        device = f"/dev/loop{number}"
        loop = os.open(device, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(loop, _LOOP_CONFIGURE, _config(image_fd, image))
        except OSError as exc:
            os.close(loop)
            if exc.errno == 16:  # EBUSY: taken since it was found free
                continue
            raise
        return loop, device
    raise OSError(16, "every free loop device was taken before it could be used")


def mount_image(image: Path, target: Path) -> None:
    """Mount the ext4 image ``image`` on ``target`` (``nosuid,nodev``), through a
    loop device released when it is unmounted."""
    image_fd = os.open(image, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        loop, device = _attach(image_fd, image)
    finally:
        os.close(image_fd)
    try:  # once mounted, the filesystem holds the device; closing it then is safe
        flags = _MS_NOSUID | _MS_NODEV
        if _libc().mount(device.encode(), os.fsencode(target), b"ext4", flags, None) != 0:
            _raise_errno(f"mounting {device} on {target}")
    finally:
        os.close(loop)  # not mounted: the device is released here (autoclear)


def unmount(target: Path) -> None:
    """Unmount ``target`` (its last path component is not followed); detach it
    lazily if it is busy."""
    libc = _libc()
    path = os.fsencode(target)
    if libc.umount2(path, _UMOUNT_NOFOLLOW) == 0:
        return
    if ctypes.get_errno() == 16 and libc.umount2(path, _UMOUNT_NOFOLLOW | _MNT_DETACH) == 0:
        return
    _raise_errno(f"unmounting {target}")
