# A ViT-style encoder (pre-norm blocks, class token, learned positions),
# compiled, inference under no_grad and bf16 autocast, random images cut
# into patches by a Linear (no convolution: cuDNN chooses its own):
# python3 vit_compile.py B LAYERS DIM CALLS
# (the code below is what the H200 ran: tests/data/compile/real.tsv)
import sys,torch,torch.nn as nn,torch.nn.functional as F
B,L,D,C=map(int,sys.argv[1:5]);H=max(1,D//64);P=196
class Bk(nn.Module):
 def __init__(s):
  super().__init__();s.n1=nn.LayerNorm(D);s.qkv=nn.Linear(D,3*D);s.proj=nn.Linear(D,D)
  s.n2=nn.LayerNorm(D);s.fc1=nn.Linear(D,4*D);s.fc2=nn.Linear(4*D,D)
 def forward(s,x):
  b,t,_=x.shape;q,k,v=s.qkv(s.n1(x)).reshape(b,t,3,H,D//H).permute(2,0,3,1,4).unbind(0)
  x=x+s.proj(F.scaled_dot_product_attention(q,k,v).transpose(1,2).reshape(b,t,D))
  return x+s.fc2(F.gelu(s.fc1(s.n2(x))))
class V(nn.Module):
 def __init__(s):
  super().__init__();s.embed=nn.Linear(768,D);s.cls=nn.Parameter(torch.zeros(1,1,D))
  s.pos=nn.Parameter(torch.zeros(1,P+1,D));s.blocks=nn.ModuleList(Bk() for _ in range(L))
  s.norm=nn.LayerNorm(D);s.head=nn.Linear(D,1000)
 def forward(s,p):
  x=s.embed(p);x=torch.cat([s.cls.expand(x.shape[0],-1,-1),x],1)+s.pos
  for b in s.blocks:x=b(x)
  return s.head(s.norm(x)[:,0])
torch.manual_seed(0);m=V().cuda().eval();c=torch.compile(m)
with torch.no_grad(),torch.autocast("cuda",torch.bfloat16):
 for _ in range(C):c(torch.randn(B,P,768,device="cuda")).float().sum().item()
torch.cuda.synchronize();print("peaks",torch.cuda.max_memory_allocated(),torch.cuda.max_memory_reserved())
