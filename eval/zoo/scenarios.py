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

# ---------------------------------------------------------------------------------------------------------
# Batch 2 (2026-12-04): network-like faults made on one host (a rank's TCP connections destroyed with
# `ss -K`), two torchrun agents as two nodes (c10d or static rendezvous on 127.0.0.1, console_node0/1.log),
# fail_slow runs with per-step timing lines, and more storage / data / config / hang kinds.

C10D2 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
         "--rdzv-id {rid} --rdzv-conf join_timeout=20")
STATIC2 = "torchrun --nnodes 2 --node-rank {node} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port}"


def _c10d(rid: str, script: str, extra: str = "") -> str:
    return C10D2.replace("{rid}", rid) + f"{extra} {script}"


def _static(node: int, script: str) -> str:
    return STATIC2.replace("{node}", str(node)) + f" {script}"


TOKENS_NPY = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("tokens", exist_ok=True)
for k in range(2):
    np.save(f"tokens/shard_{k:03d}.npy", np.random.randint(0, 4096, 2_000_000).astype(np.uint16))
EOF"""

FEATURES_BIN = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("features", exist_ok=True)
for k in range(300):
    np.random.rand(100, 32).astype(np.float32).tofile(f"features/chunk_{k:04d}.bin")
EOF"""

TOKENIZED_JSON = r"""python - <<'EOF'
import json, os, random
os.makedirs("data/tokenized", exist_ok=True)
for r in range(3):
    rng = random.Random(r)
    vocab = 8000 if r != 2 else 32000  # part-02 was tokenized with the 32k tokenizer of the previous run
    json.dump([[rng.randrange(vocab) for _ in range(33)] for _ in range(400)], open(f"data/tokenized/part-{r:02d}.json", "w"))
EOF"""

PARQUET = r"""python - <<'EOF'
import os, random
import pyarrow as pa, pyarrow.parquet as pq
os.makedirs("data/train", exist_ok=True)
for k in range(4):
    rng = random.Random(k)
    feats = [[rng.random() for _ in range(12)] for _ in range(500)]
    pq.write_table(pa.table({"features": feats, "label": [rng.randrange(4) for _ in range(500)]}),
                   f"data/train/part-{k:05d}.parquet")
p = "data/train/part-00003.parquet"
raw = open(p, "rb").read()
open(p, "wb").write(raw[: len(raw) - 300])  # upload cut short: footer missing
EOF"""

ARROW = r"""python - <<'EOF'
import os, random
import pyarrow as pa
os.makedirs("cache", exist_ok=True)
t = pa.table({"embedding": [[random.random() for _ in range(16)] for _ in range(3000)],
              "score": [random.random() for _ in range(3000)]})
with pa.OSFile("cache/train.arrow", "wb") as sink:
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
raw = open("cache/train.arrow", "rb").read()
open("cache/train.arrow", "wb").write(raw[: len(raw) * 7 // 10])  # cache written by a job that was killed
EOF"""

REVIEWS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
for r in range(4):
    rng = random.Random(r)
    with open(f"data/reviews_{r}.jsonl", "w") as f:
        for i in range(400):
            rec = {"bow": [rng.random() for _ in range(50)], "rating": rng.randint(1, 5)}
            if r == 2 and i >= 250:  # rows appended from the new export, which renamed the field
                rec["stars"] = rec.pop("rating")
            f.write(json.dumps(rec) + "\n")
EOF"""

NUMPY_CKPT = r"""python - <<'EOF'
import os, numpy as np, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
o = torch.optim.Adam(m.parameters())
m(torch.randn(4, 20)).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "epoch": 9,
            "best_acc": np.float64(0.913), "val_history": np.array([0.71, 0.85, 0.913])}, "checkpoints/last.pt")
EOF"""

OPT_CKPT = r"""python - <<'EOF'
import os, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64); self.norm = nn.LayerNorm(64); self.fc2 = nn.Linear(64, 4)
    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))
m = Net()
o = torch.optim.AdamW(m.parameters(), weight_decay=0.01)  # the run was started before param groups were split
m(torch.randn(2, 32)).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optim": o.state_dict(), "epoch": 4}, "checkpoints/epoch_4.pt")
EOF"""

SHARD_META = r"""python - <<'EOF'
import json, os
os.makedirs("shards", exist_ok=True)
for r in range(3):
    for k in range(3):
        with open(f"shards/meta_{r}_{k}.json", "w") as f:
            text = json.dumps({"num_samples": 640, "batch": 16, "files": [f"s{r}{k}.bin"]})
            if r == 2 and k == 1:
                text = text[:0]  # metadata file left empty by the preprocessing job
            f.write(text)
EOF"""

SKEW_JSONL = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = [f"Word{i}," for i in range(3000)]
for r in range(3):
    rng = random.Random(r)
    with open(f"data/shard_{r}.jsonl", "w") as f:
        for i in range(1600):
            n = 60 if not (r == 2 and i >= 480) else 4000  # rank 2's shard turns into whole-book documents
            f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(n))}) + "\n")
EOF"""

MOUNT_SCRATCH = ("mkdir -p /mnt/scratch && (mountpoint -q /mnt/scratch && umount /mnt/scratch || true) && "
                 "mount -t tmpfs -o size=40m tmpfs /mnt/scratch")
REMOUNT_RO_AFTER_STEP100 = ("for i in $(seq 600); do [ -e /mnt/shared/ckpt/exp12/step_000100.pt ] && break; "
                            "sleep 0.1; done; mount -o remount,ro /mnt/shared")
MOUNT_SHARED = ("mkdir -p /mnt/shared && (mountpoint -q /mnt/shared && umount /mnt/shared || true) && "
                "mount -t tmpfs -o size=64m tmpfs /mnt/shared")

SCENARIOS += [
    # network: a rank's TCP connections destroyed from outside (`ss -K`) while it trains
    Scenario("net_ss_kill_rank1", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py", action=("ss_kill", 1, 15)),
    Scenario("net_ss_kill_spawn", "train.py", "python train.py", action=("ss_kill", 0, "iter   300")),
    Scenario("net_ss_kill_twonode", "train.py", _c10d("job31", "train.py"), cmd2=_c10d("job31", "train.py"),
             action=("ss_kill", 2, 16)),
    # infrastructure: a node lost, a node preempted
    Scenario("inf_node0_lost_twonode", "train.py", _static(0, "train.py"), cmd2=_static(1, "train.py"),
             action=("kill_node", 0, signal.SIGKILL, 16)),
    Scenario("inf_node1_preempted_twonode", "train.py", _c10d("run-77", "train.py"), cmd2=_c10d("run-77", "train.py"),
             action=("kill_node_launcher", 1, signal.SIGTERM, "node1 step 100 "), cmd2_delay_s=3.0),
    # host_oom
    Scenario("oom_dataloader_workers_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py",
             action=("cgroup", 0, 900)),
    Scenario("oom_graph_leak_spawn", "train.py", "python train.py", action=("cgroup", 1, 700)),
    Scenario("oom_twonode_cgroup", "train.py", _static(0, "train.py"), cmd2=_static(1, "train.py"),
             action=("cgroup", 3, 800)),
    # storage
    Scenario("st_safetensors_disk_full", "train.py", "python train.py", setup=MOUNT_SCRATCH,
             teardown="umount /mnt/scratch"),
    Scenario("st_remount_ro_midrun", "train.py", f"{TR} 2 --master-port {{port}} train.py", setup=MOUNT_SHARED,
             teardown="umount /mnt/shared", action=("shell", 0, REMOUNT_RO_AFTER_STEP100)),
    Scenario("st_mmap_truncated_sigbus", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", setup=TOKENS_NPY,
             action=("shell", 8, "truncate -s 65536 tokens/shard_001.npy")),
    Scenario("st_too_many_open_files", "train.py",
             "python -m torch.distributed.run --nproc-per-node 2 --master-port {port} train.py", setup=FEATURES_BIN,
             nofile=256),
    # data
    Scenario("data_token_id_oob_shard", "train.py", f"{TR} 3 --master-port {{port}} train.py", setup=TOKENIZED_JSON),
    Scenario("data_parquet_corrupt", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py",
             setup=PARQUET),
    Scenario("data_arrow_truncated_spawn", "train.py", "python train.py", setup=ARROW),
    Scenario("data_schema_missing_key", "train.py", "python train.py", setup=REVIEWS),
    # config
    Scenario("cfg_nproc_assert_tp", "train.py", f"{TR} 3 --master-port {{port}} train.py --tensor-parallel-size 2"),
    Scenario("cfg_dist_debug_typo", "train.py", f"TORCH_DISTRIBUTED_DEBUG=DEBUG {TR} 2 --master-port {{port}} train.py"),
    Scenario("cfg_weights_only_resume", "train.py",
             f"{TR} 2 --master-port {{port}} train.py --resume checkpoints/last.pt", setup=NUMPY_CKPT),
    Scenario("cfg_rdzv_id_mismatch_twonode", "train.py", _c10d("llm-sft-01", "train.py"),
             cmd2=_c10d("llm-sft-1", "train.py")),
    Scenario("cfg_nproc_mismatch_twonode", "train.py", _static(0, "train.py"),
             cmd2=_static(1, "train.py").replace("--nproc-per-node 2", "--nproc-per-node 1")),
    # user_code
    Scenario("uc_inplace_mask_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py"),
    Scenario("uc_inference_mode_backward_spawn", "train.py", "python train.py"),
    Scenario("uc_target_shape", "train.py", f"{TR} 4 --master-port {{port}} train.py"),
    Scenario("uc_checkpoint_recompute", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py"),
    Scenario("uc_rank0_save_no_barrier", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("uc_twonode_typeerror", "train.py", _c10d("exp3", "train.py"), cmd2=_c10d("exp3", "train.py")),
    Scenario("uc_optimizer_groups_resume", "train.py", f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train.py",
             setup=OPT_CKPT),
    # hangs
    Scenario("hang_loader_thread_died", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py", setup=SHARD_META),
    Scenario("hang_cpu_loop_rank1", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hang_two_group_order", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py"),
    Scenario("hang_fork_lock_worker", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hang_twonode_rank0_broadcast", "train.py", _static(0, "train.py"), cmd2=_static(1, "train.py")),
    # fail_slow
    Scenario("slow_cpu_hog_all", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("hog", "step 100 ", "0,1")),
    Scenario("slow_stopcont_rank1", "train.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py",
             action=("stopcont", 1, 10, 100, 150)),
    Scenario("slow_data_skew_rank2", "train.py", f"{TR} 3 --master-port {{port}} train.py", setup=SKEW_JSONL),
    Scenario("slow_pin_hog_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py",
             action=("pin_hog", 1, "[00:05<")),
    Scenario("slow_cpu_quota_spawn", "train.py", "python train.py", action=("cpu_quota", "it 30 ", 40)),
]
