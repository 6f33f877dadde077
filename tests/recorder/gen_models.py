"""Generation and serving-style workloads no test had seen: Hugging Face
models built from configs (random weights, nothing downloaded), a small
denoiser, a serving loop and one torch.compile training step.
python3 gen_models.py NAME"""
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

name = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)


def gpt2(n_layer=4):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=12000, n_embd=512, n_layer=n_layer,
                     n_head=8, n_positions=512, bos_token_id=1,
                     eos_token_id=2)
    return GPT2LMHeadModel(cfg)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=16000, hidden_size=512,
                      intermediate_size=1408, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=2,
                      max_position_embeddings=1024)
    return LlamaForCausalLM(cfg)


class Denoiser(nn.Module):
    """A small UNet-like eps-predictor: two levels, a timestep and a
    conditioning embedding added at each block."""

    def __init__(self, c=64, cond=128):
        super().__init__()
        self.temb = nn.Sequential(nn.Linear(c, 4 * c), nn.SiLU(),
                                  nn.Linear(4 * c, 4 * c))
        self.cemb = nn.Linear(cond, 4 * c)
        self.inp = nn.Conv2d(4, c, 3, padding=1)
        self.d1 = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.mid = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.up = nn.ConvTranspose2d(2 * c, c, 4, stride=2, padding=1)
        self.out = nn.Conv2d(2 * c, 4, 3, padding=1)
        self.p1 = nn.Linear(4 * c, 2 * c)
        self.c = c

    def forward(self, x, t, cond):
        half = self.c // 2
        f = torch.exp(-torch.arange(half, device=x.device) * (9.21 / half))
        a = t[:, None].float() * f[None]
        e = self.temb(torch.cat([a.sin(), a.cos()], 1).to(x.dtype))
        e = e + self.cemb(cond)
        h0 = F.silu(self.inp(x))
        h1 = F.silu(self.d1(h0)) + self.p1(e)[:, :, None, None]
        h1 = F.silu(self.mid(h1))
        u = F.silu(self.up(h1))
        return self.out(torch.cat([u, h0], 1))


if name == "gen_beam":
    # Beam search: 4 beams, early stopping off, so every step runs.
    m = gpt2().to(dev, torch.float16).eval()
    with torch.no_grad():
        for b, t in [(2, 64), (3, 120)]:
            x = torch.randint(0, 12000, (b, t), device=dev)
            m.generate(x, max_new_tokens=24, num_beams=4, do_sample=False,
                       pad_token_id=0, eos_token_id=None)
elif name == "gen_sample":
    # Top-k / top-p sampling with a temperature (multinomial).
    m = llama().to(dev, torch.bfloat16).eval()
    with torch.no_grad():
        for b, t in [(4, 80), (8, 40)]:
            x = torch.randint(1, 16000, (b, t), device=dev)
            m.generate(x, max_new_tokens=32, do_sample=True, top_k=50,
                       top_p=0.9, temperature=0.8, pad_token_id=0)
elif name == "gen_static":
    # A static KV cache preallocated to the maximum length.
    m = llama().to(dev, torch.bfloat16).eval()
    with torch.no_grad():
        for b, t in [(4, 100), (4, 60)]:
            x = torch.randint(1, 16000, (b, t), device=dev)
            m.generate(x, max_new_tokens=24, do_sample=False, pad_token_id=0,
                       cache_implementation="static")
elif name == "gen_leftpad":
    # Left-padded prompts of different lengths with their attention mask.
    m = gpt2().to(dev, torch.float16).eval()
    lens = [96, 40, 71, 12]
    t = max(lens)
    x = torch.randint(1, 12000, (len(lens), t), device=dev)
    mask = torch.ones(len(lens), t, dtype=torch.long, device=dev)
    for i, n in enumerate(lens):
        x[i, :t - n] = 0
        mask[i, :t - n] = 0
    with torch.no_grad():
        m.generate(x, attention_mask=mask, max_new_tokens=32,
                   do_sample=False, pad_token_id=0)
elif name == "encdec_gen":
    # BART encoder-decoder generation (greedy), two source lengths.
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = BartConfig(vocab_size=10000, d_model=512, encoder_layers=3,
                     decoder_layers=3, encoder_attention_heads=8,
                     decoder_attention_heads=8, encoder_ffn_dim=1024,
                     decoder_ffn_dim=1024, max_position_embeddings=512)
    m = BartForConditionalGeneration(cfg).to(dev, torch.float16).eval()
    with torch.no_grad():
        for b, s in [(4, 200), (8, 96)]:
            src = torch.randint(3, 10000, (b, s), device=dev)
            m.generate(src, max_new_tokens=24, num_beams=1, do_sample=False,
                       min_length=0)
elif name == "diffusion":
    # 20 sampling steps with classifier-free guidance, fp16, inference mode.
    m = Denoiser().to(dev, torch.float16).eval()
    with torch.inference_mode():
        b = 4
        cond = torch.randn(b, 128, device=dev, dtype=torch.float16)
        uncond = torch.zeros_like(cond)
        x = torch.randn(b, 4, 64, 64, device=dev, dtype=torch.float16)
        steps = 20
        for i in range(steps):
            t = torch.full((2 * b,), 999 - i * 50, device=dev)
            eps = m(torch.cat([x, x]), t, torch.cat([uncond, cond]))
            eu, ec = eps.chunk(2)
            eps = eu + 7.5 * (ec - eu)
            alpha = 1.0 - (i + 1) / (steps + 1)
            x = (x - (1 - alpha) ** 0.5 * eps) / alpha ** 0.5
            x = x + 0.01 * torch.randn_like(x)
elif name == "serve":
    # A server loop: requests of varying batch and length, the last
    # position's logits, empty_cache() after each request.
    m = gpt2(6).to(dev, torch.float16).eval()
    reqs = [(1, 37), (8, 128), (32, 200), (4, 500), (16, 64), (2, 300),
            (64, 32), (1, 511)]
    with torch.inference_mode():
        for b, t in reqs:
            x = torch.randint(0, 12000, (b, t), device=dev)
            logits = m(input_ids=x).logits[:, -1]
            tok = logits.float().softmax(-1).argmax(-1)
            del logits, tok
            torch.cuda.empty_cache()
elif name == "compile_mlp":
    # One torch.compile (default mode) training step of an MLP: --fake
    # runs it eagerly; the real run is Inductor's.
    m = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(),
                      nn.Linear(4096, 4096), nn.GELU(),
                      nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    cm = torch.compile(m)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randn(256, 1024, device=dev)
    loss = F.mse_loss(cm(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
else:
    raise SystemExit("unknown workload " + name)
torch.cuda.synchronize()
