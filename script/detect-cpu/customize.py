"""detect-cpu: processor facts from /proc/cpuinfo (a first version; lscpu parsing comes later)."""
import os


def preprocess(i):
    env = i['env']
    models, physical = [], set()
    try:
        with open('/proc/cpuinfo', encoding='utf-8', errors='replace') as f:
            for line in f:
                k, _, v = line.partition(':')
                k, v = k.strip(), v.strip()
                if k == 'model name':
                    models.append(v)
                elif k == 'physical id':
                    physical.add(v)
    except OSError:
        pass
    env['CM_HOST_CPU_MODEL_NAME'] = models[0] if models else 'unknown (no /proc/cpuinfo)'
    env['CM_HOST_CPU_TOTAL_LOGICAL_CORES'] = str(os.cpu_count() or 0)
    env['CM_HOST_CPU_SOCKETS'] = str(len(physical) or 1)
    return {'return': 0}
