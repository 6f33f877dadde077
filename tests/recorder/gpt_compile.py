# A nanoGPT-style GPT (GPT-2 blocks, tied embedding), AdamW, random tokens:
# python3 gpt_compile.py B T LAYERS DIM VOCAB STEPS default|reduce-overhead|eager
# (the code below is what the H200 ran, written short: validate/device/compile_device.sh)
import sys,torch,torch.nn as nn,torch.nn.functional as F
B,T,L,D,V,S=map(int,sys.argv[1:7]);M=sys.argv[7];H=max(1,D//64)
class Bk(nn.Module):
 def __init__(s):
  super().__init__();s.ln_1=nn.LayerNorm(D);s.c_attn=nn.Linear(D,3*D);s.c_proj=nn.Linear(D,D)
  s.ln_2=nn.LayerNorm(D);s.c_fc=nn.Linear(D,4*D);s.mlp_proj=nn.Linear(4*D,D)
 def forward(s,x):
  b,t,_=x.shape;q,k,v=s.c_attn(s.ln_1(x)).split(D,dim=2)
  q,k,v=(z.view(b,t,H,D//H).transpose(1,2) for z in(q,k,v))
  y=F.scaled_dot_product_attention(q,k,v,is_causal=True)
  x=x+s.c_proj(y.transpose(1,2).contiguous().view(b,t,D))
  return x+s.mlp_proj(F.gelu(s.c_fc(s.ln_2(x))))
class G(nn.Module):
 def __init__(s):
  super().__init__();s.wte=nn.Embedding(V,D);s.wpe=nn.Embedding(T,D);s.h=nn.ModuleList(Bk() for _ in range(L))
  s.ln_f=nn.LayerNorm(D);s.lm_head=nn.Linear(D,V,bias=False);s.wte.weight=s.lm_head.weight
 def forward(s,i,y):
  x=s.wte(i)+s.wpe(torch.arange(i.shape[1],device=i.device))
  for b in s.h:x=b(x)
  return F.cross_entropy(s.lm_head(s.ln_f(x)).view(-1,V),y.reshape(-1))
torch.manual_seed(0);m=G().cuda();o=torch.optim.AdamW(m.parameters(),lr=1e-4)
c=m if M=="eager" else torch.compile(m) if M=="default" else torch.compile(m,mode=M)
for _ in range(S):
 i=torch.randint(0,V,(B,T+1),device="cuda");c(i[:,:-1],i[:,1:]).backward();o.step();o.zero_grad(set_to_none=True)
torch.cuda.synchronize();print("peaks",torch.cuda.max_memory_allocated(),torch.cuda.max_memory_reserved())
