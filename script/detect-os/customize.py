"""detect-os: the host's OS, kernel, machine and libc, read without starting a process."""
import os
import platform


def preprocess(i):
    env = i['env']
    uname = platform.uname()
    env['CM_HOST_OS_TYPE'] = 'linux' if uname.system == 'Linux' else uname.system.lower()
    env['CM_HOST_SYSTEM_NAME'] = uname.node
    env['CM_HOST_OS_KERNEL_VERSION'] = uname.release
    env['CM_HOST_PLATFORM_FLAVOR'] = uname.machine
    env['CM_HOST_OS_MACHINE'] = uname.machine
    env['CM_HOST_OS_BITS'] = '64' if platform.architecture()[0] == '64bit' else '32'
    env['CM_HOST_PLATFORM_DESCRIPTION'] = platform.platform()
    libc, libc_version = platform.libc_ver()
    env['CM_HOST_OS_GLIBC_VERSION'] = libc_version if libc == 'glibc' else ''
    release = _os_release()
    env['CM_HOST_OS_FLAVOR'] = release.get('ID', '')
    env['CM_HOST_OS_VERSION'] = release.get('VERSION_ID', '')
    env['CM_HOST_OS_NAME'] = release.get('PRETTY_NAME', uname.system)
    env['CM_HOST_PYTHON_VERSION'] = platform.python_version()
    i['state']['os_uname_machine'] = uname.machine
    i['state']['os_uname_all'] = ' '.join(uname)
    return {'return': 0}


def _os_release():
    out = {}
    for path in ('/etc/os-release', '/usr/lib/os-release'):
        if os.path.isfile(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                for line in f:
                    k, sep, v = line.strip().partition('=')
                    if sep:
                        out[k] = v.strip().strip('"')
            break
    return out
