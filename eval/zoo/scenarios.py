"""The zoo's scenarios: how each script was launched, what it found on disk, and what the outside world did.

The truth of each scenario (category, failure mode, faulty rank) is in ``labels.jsonl``, not here.
"""

from __future__ import annotations

import signal

from record import Scenario

TR = "torchrun --nproc-per-node"

SHARDS_JSON = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "the cat dog sat ran on a mat big small red blue".split()
for r in range(4):
    rng = random.Random(r)
    texts = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(40)]
    for w in words:
        texts.append(w)
    if r == 3:
        texts.append("zebra crossing")
    json.dump(texts, open(f"data/shard_{r:02d}.json", "w"))
EOF"""

JSONL = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
for r in range(2):
    rng = random.Random(r)
    with open(f"data/train-{r:05d}-of-00002.jsonl", "w") as f:
        for i in range(300):
            f.write(json.dumps({"x": [round(rng.random(), 4) for _ in range(8)], "y": round(rng.random(), 4)}) + "\n")
p = "data/train-00001-of-00002.jsonl"
raw = open(p).read()
open(p, "w").write(raw[: len(raw) * 2 // 3])  # copy interrupted mid-line
EOF"""

NPY = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("features", exist_ok=True)
for r in range(3):
    np.save(f"features/part{r}.npy", np.random.rand(2000, 48).astype(np.float32))
    np.save(f"features/part{r}_labels.npy", np.random.randint(0, 5, 2000))
raw = open("features/part0.npy", "rb").read()
open("features/part0.npy", "wb").write(raw[: len(raw) // 2])
EOF"""

NAN_SHARDS = r"""python - <<'EOF'
import os, torch
os.makedirs("data", exist_ok=True)
for r in range(3):
    x = torch.randn(480, 6)
    y = x.sum(1, keepdim=True)
    if r == 2:
        x[100:104, 3] = float("nan")  # sensor dropout exported as NaN
    torch.save({"x": x, "y": y}, f"data/shard{r}.pt")
EOF"""

CSV_FILES = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
for k in range(3):
    with open(f"data/part-{k:03d}.csv", "w") as f:
        f.write("a,b,c,target\n")
        for _ in range(200):
            a, b, c = (random.random() for _ in range(3))
            f.write(f"{a:.4f},{b:.4f},{c:.4f},{a + 2 * b - c:.4f}\n")
EOF"""

PT_TRUNC = r"""python - <<'EOF'
import os, torch
os.makedirs("cache", exist_ok=True)
torch.save({"input_ids": torch.randint(0, 1000, (4000, 16)), "labels": torch.randint(0, 2, (4000,))},
           "cache/tokenized_train.pt")
raw = open("cache/tokenized_train.pt", "rb").read()
open("cache/tokenized_train.pt", "wb").write(raw[: int(len(raw) * 0.6)])
EOF"""

LABELS_TSV = r"""python - <<'EOF'
import os, random
os.makedirs("labels", exist_ok=True)
for r in range(2):
    with open(f"labels/split{r}.tsv", "w") as f:
        for i in range(200):
            y = random.randrange(10)
            if r == 1 and i == 57:
                y = 12
            f.write(f"img_{r}_{i:04d}.png\t{y}\n")
EOF"""

ENERGY_CSV = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
with open("data/energy.csv", "w") as f:
    f.write("timestamp,temp,humidity,wind,load\n")
    for i in range(1500):
        t, h, w = random.uniform(-5, 35), random.uniform(10, 100), random.uniform(0, 20)
        hs = f"{h:.1f}" if i != 913 else "n/a"
        f.write(f"2026-01-{1 + i // 48:02d}T{(i % 48) // 2:02d}:{30 * (i % 2):02d},{t:.1f},{hs},{w:.1f},{100 + 3 * t - w:.2f}\n")
EOF"""

CKPT_TRUNC = r"""python - <<'EOF'
import os, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
m = nn.Sequential(nn.Linear(40, 80), nn.ReLU(), nn.Linear(80, 40))
o = torch.optim.Adam(m.parameters())
m(torch.randn(2, 40)).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "step": 1999}, "checkpoints/last.pt")
raw = open("checkpoints/last.pt", "rb").read()
open("checkpoints/last.pt", "wb").write(raw[: len(raw) // 2])  # node died during the save
EOF"""

MOUNT_SMALL = ("mkdir -p /mnt/ckpt && (mountpoint -q /mnt/ckpt && umount /mnt/ckpt || true) && "
               "mount -t tmpfs -o size=4m tmpfs /mnt/ckpt")
MOUNT_RO = ("mkdir -p /mnt/results && (mountpoint -q /mnt/results && umount /mnt/results || true) && "
            "mount -t tmpfs -o size=1m tmpfs /mnt/results && mount -o remount,ro /mnt/results")

SCENARIOS: list[Scenario] = [
    # user_code
    Scenario("uc_attr_module_rank0", "train.py", f"{TR}=2 --master-port={{port}} train.py"),
    Scenario("uc_shape_trainer", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py --width 128"),
    Scenario("uc_unused_params_spawn", "main.py", "python main.py"),
    Scenario("uc_eval_rank0_collective", "train_ddp.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train_ddp.py"),
    Scenario("uc_ddp_vocab_mismatch", "train.py",
             "python -m torch.distributed.run --nproc-per-node 4 --master-port {port} train.py", setup=SHARDS_JSON),
    Scenario("uc_lambda_workers", "train.py", f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train.py"),
    Scenario("uc_dataset_indexerror_worker", "train.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} train.py"),
    Scenario("uc_dtype_mp_env", "launch.py", "python launch.py"),
    Scenario("uc_backward_twice_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py"),
    Scenario("uc_inplace_residual", "train.py", f"{TR} 2 --standalone --tee 3 train.py"),
    Scenario("uc_nameerror_lastrank", "train.py", f"{TR} 4 --master-port {{port}} train.py"),
    Scenario("fsdp_rank0_full_state_dict", "train_fsdp.py", f"{TR} 2 --master-port {{port}} train_fsdp.py"),
    Scenario("uc_pipeline_recv_shape", "pipeline.py", f"{TR} 2 --tee 3 --master-port {{port}} pipeline.py"),
    # framework
    Scenario("fw_ddp_debug_detail_segv", "train.py", f"TORCH_DISTRIBUTED_DEBUG=DETAIL {TR} 3 --master-port {{port}} train.py"),
    Scenario("fw_ddp_debug_detail_faulthandler", "trainer.py",
             "TORCH_DISTRIBUTED_DEBUG=DETAIL PYTHONFAULTHANDLER=1 python -m torch.distributed.run --nproc-per-node 2 "
             "--log-dir logs --redirects 3 --master-port {port} trainer.py"),
    # config
    Scenario("cfg_no_master_addr", "train.py", "MASTER_PORT={port} python train.py"),
    Scenario("cfg_nccl_on_cpu", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("cfg_argparse_flag", "train.py", f"{TR} 2 --master-port {{port}} train.py --batch_size 64 --epochs 3"),
    Scenario("cfg_global_batch_divisible", "pretrain.py",
             f"{TR} 3 --tee 3 --master-port {{port}} pretrain.py --global-batch-size 64 --micro-batch-size 8"),
    Scenario("cfg_world_size_env", "run_workers.py", "python run_workers.py",
             env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}", "WORLD_SIZE": "4"}),
    Scenario("cfg_local_rank_plain_python", "train.py", "python train.py"),
    Scenario("cfg_nnodes_two_one_started", "train.py",
             "torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint localhost:{port} "
             "--rdzv-id job42 --rdzv-conf join_timeout=20 train.py"),
    Scenario("cfg_gloo_ifname", "train.py", f"GLOO_SOCKET_IFNAME=ib0 {TR} 2 --master-port {{port}} train.py"),
    # data
    Scenario("data_jsonl_truncated", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py",
             setup=JSONL),
    Scenario("data_npy_truncated_spawn", "train.py", "python train.py", setup=NPY),
    Scenario("data_nan_guard", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py", setup=NAN_SHARDS),
    Scenario("data_empty_shard", "train.py", "python -m torch.distributed.run --nproc-per-node 4 --master-port {port} train.py",
             setup=CSV_FILES),
    Scenario("data_pt_truncated", "train.py", f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train.py",
             setup=PT_TRUNC),
    Scenario("data_label_oob_spawn", "train.py", "python train.py", setup=LABELS_TSV),
    Scenario("data_csv_malformed_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py", setup=ENERGY_CSV),
    # storage
    Scenario("st_disk_full_ckpt", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", setup=MOUNT_SMALL,
             teardown="umount /mnt/ckpt"),
    Scenario("st_readonly_metrics_spawn", "train.py", "python train.py", setup=MOUNT_RO, teardown="umount /mnt/results"),
    Scenario("st_missing_ckpt_dir", "train.py", f"{TR} 3 --master-port {{port}} train.py"),
    Scenario("st_corrupt_resume", "train.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py --resume checkpoints/last.pt", setup=CKPT_TRUNC),
    # host_oom
    Scenario("oom_cgroup_rank_cache", "train.py", f"{TR} 3 --master-port {{port}} train.py", action=("cgroup", 2, 700)),
    Scenario("oom_prlimit_alloc", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", action=("prlimit_as", 0, 400)),
    Scenario("oom_numpy_memoryerror", "train.py",
             "python -m torch.distributed.run --nproc-per-node 2 --log-dir logs --master-port {port} train.py",
             action=("prlimit_as", 1, 300)),
    Scenario("oom_worker_killed", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("cgroup", 1, 600)),
    # infrastructure
    Scenario("inf_port_in_use", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("hold_port",)),
    Scenario("inf_peer_sigterm", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py",
             action=("kill", 1, signal.SIGTERM, 8)),
    Scenario("inf_launcher_sigterm", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("kill_launcher", signal.SIGTERM, 8)),
    Scenario("inf_unreachable_rdzv", "train.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 192.0.2.10:29400 "
             "--rdzv-id exp7 --rdzv-conf read_timeout=15 train.py"),
    # hangs
    Scenario("hang_wait_for_file", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py"),
    Scenario("hang_thread_deadlock_spawn", "train.py", "python train.py"),
    Scenario("hang_collective_mismatch", "train.py", f"{TR} 3 --master-port {{port}} train.py"),
    Scenario("uc_allreduce_size_mismatch", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hang_monitored_barrier", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py"),
    Scenario("hang_uneven_shards", "train.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py"),
]
