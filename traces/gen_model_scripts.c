/*
 * Tensor scripts of the transformer models; the syntax is in
 * gen_model_scripts.h.  Each was transcribed from a real recording (see
 * tests/data/traces, recorded on an H200 with torch 2.11): GPT-2 small in
 * fp32 and under bf16 autocast (HF transformers 5, SDPA attention with
 * dropout, gelu_new written out as its pointwise ops), BERT-base under
 * no_grad.  The workspaces of cuBLASLt's bias-gradient epilogue
 * (min(N x B x T x 8, 132 MiB)), the SDPA backward buffers and the sort
 * buffers of the embedding backward are fitted to the recordings and so
 * approximate for other shapes; everything else is exact tensor sizes.
 */
#include <config.h>

#include "traces/gen_model_scripts.h"

const msim_tscripts_t msim_gpt2_fp32 = {
	.pre = "t0=B*T*H*p t1=T*8 t2=T*8 -t1 t3=T*H*p t4=B*T*H*p t5=B*T*H "
	       "t6=B*T*H*p -t4",
	.layer = "-^t10 -^t26 t0=B*T*H*a t1=B*T*4 t2=B*T*4 t3=B*T*Q*a !ws "
		 "?c:t4=B*T*H*a ?c:t5=B*T*H*a t6=B*T*H*a t7=B*N*T*4 t8=B*T*H*a "
		 "t9=B*T*H t10=B*T*H*a -t8 t11=B*T*H*a t12=B*T*H*a t13=B*T*4 "
		 "t14=B*T*4 t15=B*T*F*a t16=B*T*F*a t17=B*T*F*a t18=B*T*F*a "
		 "-t17 t19=B*T*F*a -t18 t20=B*T*F*a -t19 t21=B*T*F*a -t20 "
		 "t22=B*T*F*a t23=B*T*F*a t24=B*T*H*a t25=B*T*H t26=B*T*H*a "
		 "-t24 t27=B*T*H*a",
	.tail = "-^t10 -^t26 t0=B*T*H*a t1=B*T*4 t2=B*T*4 -&t0 -&t3 "
		"t3=B*T*V*a t4=B*T1*8 t5=B*T*8 t6=B*T*V*4 t7=4 t8=4 -t4 -t3 "
		"t9=4 t10=B*T*V*4 -t5 -t8 t11=B*T*V*4 -t10 -t6 t12=V*H*p !wsb "
		"t37=B*T*H*a -t11 -t0 t14=B*T*H*a G0=H*p G1=H*p",
	.layer_bwd =
		"-^t37 -@t27 -@>t1 -@>t2 -^t42 t0=B*T*H*a -@t25 t1=B*T*F*a "
		"G10=F*H*p G11=H*p t4=WH t5=SH -t5 -t4 -t0 -@t23 t6=B*T*F*a "
		"t7=B*T*F*a -t1 -@t22 -@t16 t8=B*T*F*a -t6 -@t21 t9=B*T*F*a "
		"-t8 t10=B*T*F*a t11=B*T*F*a t12=B*T*F*a t13=B*T*F*a -t12 -t11 "
		"-t10 -@t15 -t13 t14=B*T*F*a -t7 -t14 t15=B*T*H*a G8=H*F*p "
		"G9=F*p t18=WF t19=SF -t19 -t18 -t9 -@t12 t20=B*T*H*a G6=H*p "
		"G7=H*p -t15 -@t11 -@t13 -@t14 -t20 t23=B*T*H*a -@t9 "
		"t24=B*T*H*a G4=H*H*p G5=H*p t27=WH t28=SH -t28 -t27 -t23 "
		"t29=B*T*H*a t30=B*T*H*a t31=B*T*H*a t32=B*T*H*a t33=B*N*T*4 "
		"t34=B*N*T*4 -t33 -t32 t35=B*T1*H*4 -t34 -t35 -t24 -@t4 -@t3 "
		"-@t5 -@t7 -@t6 t36=B*T*Q*a -t29 -t30 -t31 t37=B*T*H*a "
		"G2=H*Q*p G3=Q*p t40=WQ t41=SQ -t41 -t40 -t36 -@t0 t42=B*T*H*a "
		"G0=H*p G1=H*p",
	.pre_bwd =
		"-^t37 -@t6 -@>t1 -@>t2 -^t42 t0=B*T*H*a -%t14 -@t5 t1=T*H*p "
		"G1=P*H*p -t1 -@t2 t3=B*T*8 t4=B*T*8 t5=B*T*8 t6=EM1 -t6 -t5 "
		"t7=V*H*p t8=B*T*8 t9=8 t10=B*T*8 t11=1279 -t11 -t10 t12=B*T*8 "
		"t13=B*T*8 t14=1279 -t14 t15=8 t16=EM2 t17=EM3 -t17 -t16 -t15 "
		"-t13 -t12 -t9 -t8 -t4 -t3 -t0 G0=V*H*p -%t12 -t7 -%t9",
	.out = "t27",
	.loss = "t7",
	.casts = "",
	.kvcopies = "t4 t5",
	.wcasts = "",
	.ckpt_cache = true,
	.layer_params = 12,
	.pre_params = 2,
};

const msim_tscripts_t msim_gpt2_amp = {
	.pre = "t0=B*T*H*p t1=T*8 t2=T*8 -t1 t3=T*H*p t4=B*T*H*p t5=B*T*H "
	       "t6=B*T*H*p -t4",
	.layer = "-^t20 -^t18 -^t41 t0=B*T*H*4 t1=B*T*4 t2=B*T*4 t3=H*Q*a "
		 "t4=B*T*H*a t5=Q*a t6=B*T*Q*a !ws ?c:t7=B*T*H*a ?c:t8=B*T*H*a t9=8 "
		 "t10=8 t11=B*T*H*a t12=B*N*T*4 t13=256 -t13 t14=H*H*a t15=H*a "
		 "t16=B*T*H*a t17=B*T*H t18=B*T*H*a -t16 t19=B*T*H*4 -t0 "
		 "t20=B*T*H*4 t21=B*T*4 t22=B*T*4 t23=H*F*a t24=B*T*H*a t25=F*a "
		 "t26=B*T*F*a t27=B*T*F*a t28=B*T*F*4 t29=B*T*F*4 t30=B*T*F*4 "
		 "-t29 t31=B*T*F*4 -t30 t32=B*T*F*4 -t31 t33=B*T*F*4 -t32 "
		 "t34=B*T*F*4 t35=B*T*F*4 -t26 t36=H*F*a t37=B*T*F*a t38=H*a "
		 "t39=B*T*H*a -t35 t40=B*T*H t41=B*T*H*a -t39 t42=B*T*H*4",
	.tail = "-^t20 -^t18 -^t41 t0=B*T*H*4 t1=B*T*4 t2=B*T*4 -&t0 -&t3 "
		"t3=V*H*a t4=B*T*H*a t5=B*T*V*a t6=B*T*V*4 t7=B*T1*8 t8=B*T*8 "
		"t9=B*T*V*4 t10=4 t11=4 -t6 -t7 -t0 -t5 !exit t12=4 "
		"t13=B*T*V*4 -t8 -t11 t14=B*T*V*4 -t13 -t9 t15=B*T*V*a -t14 "
		"t16=V*H*a !wsb t17=B*T*H*a -t15 -t3 -t4 t55=B*T*H*4 -t17 "
		"t19=V*H*4 -t16 t20=B*T*H*4 G0=H*4 G1=H*4",
	.layer_bwd =
		"-^t55 -@t42 -@>t1 -@>t2 -^t57 t0=B*T*H*a t1=B*T*H*a -t0 -@t40 "
		"t2=B*T*F*a t3=H*F*a t4=H*a t5=WH t6=SH -t6 -t5 -t1 -@t37 "
		"-@t36 G11=H*4 -t4 t8=B*T*F*4 -t2 G10=H*F*4 -t3 t10=B*T*F*4 "
		"t11=B*T*F*4 t12=B*T*F*a -t11 -t8 -@t34 -@t27 t13=B*T*F*4 -t10 "
		"-@t33 t14=B*T*F*4 -t13 t15=B*T*F*a t16=B*T*F*4 -t14 "
		"t17=B*T*F*4 t18=B*T*F*4 t19=B*T*F*4 -t18 -t17 -t16 -@t28 "
		"t20=B*T*F*a -t19 -t20 t21=B*T*F*a -t12 -t21 t22=B*T*H*a "
		"t23=H*F*a t24=F*a t25=WF t26=SF -t26 -t25 -t15 -@t24 -@t23 "
		"G9=F*4 -t24 t28=B*T*H*4 -t22 G8=H*F*4 -t23 t30=B*T*H*4 "
		"G6=H*4 G7=H*4 -t28 -@t19 -@t21 -@t22 -t30 t33=B*T*H*a "
		"t34=B*T*H*a -t33 -@t17 t35=B*T*H*a t36=H*H*a t37=H*a t38=WH "
		"t39=SH -t39 -t38 -t34 -@t14 G5=H*4 -t37 G4=H*H*4 -t36 "
		"t42=B*T*H*a t43=B*T*H*a t44=B*T*H*a t45=B*T*HN*4 -t45 -t35 "
		"-@t7 -@t6 -@t8 -@t12 -@t11 -@t10 -@t9 t46=B*T*H*a -t44 "
		"t47=B*T*H*a -t43 t48=B*T*Q*a -t42 -t47 -t46 t49=B*T*H*a "
		"t50=H*Q*a t51=Q*a t52=WQ t53=SQ -t53 -t52 -t48 -@t4 -@t3 "
		"G3=Q*4 -t51 t55=B*T*H*4 -t49 G2=H*Q*4 -t50 t57=B*T*H*4 G0=H*4 "
		"G1=H*4",
	.pre_bwd =
		"-^t55 -@t6 -@>t1 -@>t2 -^t57 t0=B*T*H*p -%t20 -@t5 t1=T*H*p "
		"G1=P*H*p -t1 -@t2 t3=B*T*8 t4=B*T*8 t5=B*T*8 t6=EM1 -t6 -t5 "
		"t7=V*H*p t8=B*T*8 t9=8 t10=B*T*8 t11=1279 -t11 -t10 t12=B*T*8 "
		"t13=B*T*8 t14=1279 -t14 t15=8 t16=EM2 t17=EM3 -t17 -t16 -t15 "
		"-t13 -t12 -t9 -t8 -t4 -t3 -t0 G0=V*H*p -%t19 -t7 -%t12",
	.out = "t42",
	.loss = "t10",
	.casts = "t5 t15 t25 t38",
	.kvcopies = "t7 t8",
	.wcasts = "t3 t14 t23 t36",
	.ckpt_cache = true,
	.layer_params = 12,
	.pre_params = 2,
};

const msim_tscripts_t msim_bert_infer = {
	.pre = "t0=T*8 t1=B*T*H*a t2=B*T*8 t3=B*T*H*a -t2 t4=B*T*H*a "
	       "t5=T*H*a t6=B*T*H*a -t4 t7=B*T*H*a t8=B*T*4 t9=B*T*4 -t8 -t9 "
	       "-t6 -t1 -t0 -t3 -t5",
	.layer = "-^t14 -^t15 -^t12 -^t11 -^t10 -^t6 -^^t13 t0=B*T*H*a !ws "
		 "t1=B*T*H*a t2=B*T*H*a t3=B*T*H*a -t0 -t1 -t2 t4=B*T*H*a "
		 "t5=B*T*H*a t6=B*T*H*a t7=B*T*4 t8=B*T*4 -t7 -t8 -t5 -t4 -t3 "
		 "t9=B*T*F*a t10=B*T*F*a -t9 t11=B*T*H*a t12=B*T*H*a "
		 "t13=B*T*H*a t14=B*T*4 t15=B*T*4",
	.tail = "-^t14 -^t15 -^t12 -^t11 -^t10 -^t6 -^^t13 t0=B*H*a t1=B*H*a "
		"-t0 -&t7 -t1 !batch -^t13",
	.out = "t13",
	.casts = "",
	.layer_params = 16,
	.pre_params = 5,
};

/*
 * Decoder inference under no_grad, as Hugging Face transformers 5 runs
 * `model(input_ids)` and generate(): each layer's temporaries freed as the
 * layer runs, its input let go when the next layer starts (the caller
 * rebinds hidden_states), the embeddings kept until the model's forward
 * returns, the logits allocated by the head (only the last position's in
 * generate(): logits_to_keep=1).  With use_cache, DynamicLayer.update
 * stores torch.cat([keys, new]) (a copy, also at the first step) and lets
 * the old tensor go.  SDPA runs the fused kernels (output already in
 * (B, T, heads, head_dim) order, so no copy before the output projection;
 * flash attention's logsumexp for 2-byte activations, none from the
 * memory-efficient kernel that fp32 takes under no_grad).  GPT-2's layer
 * is the one read off tests/data/traces/train_eval_emptycache.csv's
 * evaluation (fp32, use_cache=True); Llama's follows LlamaDecoderLayer,
 * LlamaRMSNorm (upcast to fp32), apply_rotary_pos_emb and LlamaMLP op by
 * op; grouped-query attention is modelled with repeat_kv's copies.
 */
#define GPT2_LN(o) o "=B*T*H*a m1=B*T*4 m2=B*T*4 -m1 -m2 "
#define GELU_NEW "g1=B*T*F*a g2=B*T*F*a g3=B*T*F*a -g2 g4=B*T*F*a -g3 " \
	"g5=B*T*F*a -g4 g6=B*T*F*a -g5 g7=B*T*F*a -g6 g8=B*T*F*a -g1 -g7 "

const msim_tscripts_t msim_gpt2_infer = {
	.pre = "e=B*T*H*a c1=T*8 w=T*H*a o=B*T*H*a",
	.layer = "-^^o " GPT2_LN("h") "q=B*T*Q*a~H*Q !ws ?c:$k=B*S*H*a "
		 "?c:$v=B*S*H*a y=B*T*H*a ?h:l=B*N*T*4 ?h:-l at=B*T*H*a~H*H "
		 "-y -q x1=B*T*H*a -h " GPT2_LN("h2") "f=B*T*F*a~H*F "
		 GELU_NEW "-f mo=B*T*H*a~F*H -g8 o=B*T*H*a -h2 -x1 -at -mo",
	.tail = "-^^o " GPT2_LN("f") "-^o -&c1 -&e -&w lg=B*TL*V*a -f",
	.out = "o",
	.loss = "lg",
	.casts = "",
	.layer_params = 12,
	.pre_params = 2,
};

/* LlamaRMSNorm: to(float32), pow(2).mean(-1), rsqrt(var + eps), the
 * product, to(input dtype), times the weight. */
#define RMS(o) "?h:x32=B*T*H*4 pw=B*T*H*4 vr=B*T*4 -pw ep=B*T*4 rs=B*T*4 " \
	"-ep xn=B*T*H*4 -rs ?h:-x32 ?h:xc=B*T*H*2 " o "=B*T*H*a ?h:-xc " \
	"-vr -xn "

const msim_tscripts_t msim_llama_infer = {
	/* embed_tokens, cache_position, LlamaRotaryEmbedding (fp32 inside,
	 * cos and sin cast to the activations' dtype) */
	.pre = "e=B*T*H*a c1=T*8 ?h:if=D*2 pe=T*4 fr=T*D*2 em=T*D*4 "
	       "k1=T*D*4 cs=T*D*4 -k1 k2=T*D*4 sn=T*D*4 -k2 ?h:cb=T*D*2 "
	       "?h:sb=T*D*2 -if -pe -fr -em ?h:-cs ?h:-sn",
	.layer = "-^^o " RMS("h") "qp=B*T*H*a~H*H !ws kp=B*T*KD*a~H*KD "
		 "vp=B*T*KD*a~H*KD q1=B*T*H*a nq=B*T*N*D2*a rq=B*T*H*a -nq "
		 "q2=B*T*H*a -rq qe=B*T*H*a -q1 -q2 k1=B*T*KD*a "
		 "nk=B*T*KV*D2*a rk=B*T*KD*a -nk k2=B*T*KD*a -rk ke=B*T*KD*a "
		 "-k1 -k2 -qp -kp ?c:$k=B*S*KD*a ?c:$v=B*S*KD*a ?c:-ke ?c:-vp "
		 "?r:xk=B*S*H*a ?r:xv=B*S*H*a y=B*T*H*a ?h:l=B*N*T*4 ?h:-l "
		 "?r:-xk ?r:-xv at=B*T*H*a~H*H -y -qe ?u:-ke ?u:-vp -h "
		 "x1=B*T*H*a -at " RMS("h2") "gt=B*T*F*a~H*F sl=B*T*F*a -gt "
		 "up=B*T*F*a~H*F pr=B*T*F*a -sl -up dn=B*T*H*a~F*H -pr -h2 "
		 "o=B*T*H*a -dn -x1",
	.tail = "-^^o " RMS("f") "-^o -&e -&c1 -&cs -&sn -&cb -&sb "
		"lg=B*TL*V*a~H*V -f",
	.out = "o",
	.loss = "lg",
	.casts = "",
	.layer_params = 9,
	.pre_params = 1,
};

/*
 * Llama training (fp32, or the model in bf16), from the autograd graph of
 * transformers 5's LlamaForCausalLM with use_cache=True (the default, as
 * in the GPT-2 recordings: SDPA saves the cache's copies of k and v):
 * what each op saves for backward is kept until its node runs (RMSNorm:
 * the fp32 input, rsqrt and the normalised product; the projections their
 * inputs; SiLU its input and the gate product both factors; rotary only
 * cos and sin; SDPA q, k, v, its output and logsumexp), the rest freed as
 * Python lets go of it.  Backward follows the engine's order (the later
 * node first), accumulating a tensor's gradients in place.  Not recorded:
 * the temporaries of RMSNorm's and the rotary embedding's backward are
 * the ops' own outputs, the SDPA backward buffers and the embedding
 * backward's sort buffers are GPT-2's (msim_gpt2_fp32); grouped-query
 * attention keeps the cache's copies and repeat_kv's.
 */
#define RMS_T(o, s) "?h:x3" s "=B*T*H*4 pw=B*T*H*4 vr=B*T*4 -pw ep=B*T*4 " \
	"rs" s "=B*T*4 -ep xn" s "=B*T*H*4 ?h:xc" s "=B*T*H*2 " o \
	"=B*T*H*a -vr ?h:-xn" s " "
/* RMSNorm's backward: gradient gin in, weight gradient G, saved input x
 * (in fp32; the fp32 copy in bf16), result out. */
#define RMS_B(gin, G, x, s, out, P) "wg=B*T*H*a " G "=H*p -wg " \
	"gn=B*T*H*a -" gin " ?h:-" P "xc" s " ?s:-" P "xn" s " " \
	"?h:gn4=B*T*H*4 ?h:-gn ?s:" out "=B*T*H*4 ?h:g32=B*T*H*4 " \
	"gr1=B*T*H*4 gr=B*T*4 -gr1 ?h:-gn4 ?s:-gn r1=B*T*4 r2=B*T*4 -r1 " \
	"gq=B*T*4 -r2 -gr -" P "rs" s " gm=B*T*H*4 -gq p1=B*T*H*4 " \
	"p2=B*T*H*4 -p1 gp=B*T*H*4 -p2 -gm ?h:-" P "x3" s " " x " -gp " \
	"?h:" out "=B*T*H*2 ?h:-g32 "
/* The rotary embedding's backward for a gradient g of width W (heads
 * Nh): the sin product, neg, the two slices, the cos product; summed in
 * place into the result r3. */
#define ROPE_B(g, W, Nh) "r1=B*T*" W "*a r2=B*T*" Nh "*D2*a r3=B*T*" W \
	"*a -r2 r4=B*T*" W "*a -r1 -r4 r5=B*T*" W "*a -r5 -" g " "
#define ROPE_F "q1=B*T*H*a nq=B*T*N*D2*a rq=B*T*H*a -nq q2=B*T*H*a -rq " \
	"qe=B*T*H*a -q1 -q2 k1=B*T*KD*a nk=B*T*KV*D2*a rk=B*T*KD*a -nk " \
	"k2=B*T*KD*a -rk ke=B*T*KD*a -k1 -k2 "

const msim_tscripts_t msim_llama_train = {
	.pre = "e=B*T*H*a c1=T*8 ?h:if=D*2 pe=T*4 fr=T*D*2 em=T*D*4 "
	       "k1=T*D*4 cs=T*D*4 -k1 k2=T*D*4 sn=T*D*4 -k2 ?h:cb=T*D*2 "
	       "?h:sb=T*D*2 -if -pe -fr -em ?h:-cs ?h:-sn",
	.layer = "?h:-^^o " RMS_T("h", "a") "qp=B*T*H*a !ws kp=B*T*KD*a "
		 "vp=B*T*KD*a " ROPE_F "-qp -kp ?c:kc=B*T*KD*a ?c:vc=B*T*KD*a "
		 "?c:-ke ?c:-vp ?r:xk=B*T*H*a ?r:xv=B*T*H*a y=B*T*H*a l=B*N*T*4 "
		 "at=B*T*H*a x1=B*T*H*a -at " RMS_T("h2", "b") "gt=B*T*F*a "
		 "sl=B*T*F*a up=B*T*F*a pr=B*T*F*a dn=B*T*H*a o=B*T*H*a -dn "
		 "?h:-x1",
	/* final norm, lm_head, ForCausalLMLoss (logits.float(), labels
	 * padded and shifted, cross_entropy), the loss's backward, the
	 * head's and the norm's */
	.tail = "?h:-^^o " RMS_T("f", "a") "?h:-^o -&c1 ?h:-&e lg=B*T*V*a "
		"?h:lf=B*T*V*4 pd=B*T1*8 sh=B*T*8 ls=B*T*V*4 t7=4 t8=4 -pd "
		"?h:-lf -lg t9=4 t10=B*T*V*4 -sh -t8 t11=B*T*V*4 -t10 -ls "
		"?h:gh=B*T*V*2 ?h:-t11 G1=V*H*p !wsb gx=B*T*H*a -t11 -gh -f "
		RMS_B("gx", "G0", "-^o", "a", "gi", ""),
	.layer_bwd =
		"G6=F*H*p gp=B*T*F*a -@pr gs=B*T*F*a gu=B*T*F*a -gp -@sl "
		"-@up G5=H*F*p ga=B*T*H*a -gu gg=B*T*F*a -gs -@gt G4=H*F*p "
		"gb=B*T*H*a -gg -gb -@h2 " RMS_B("ga", "G8", "-@x1", "b", "g2", "@")
		"-g2 G3=H*H*p gy=B*T*H*a dq=B*T*H*a dk=B*T*KD*a dv=B*T*KD*a "
		"go=B*T*H*a d1=B*N*T*4 d2=B*N*T*4 -d1 -go da=B*T1*H*4 -d2 -da "
		"-gy -@qe -@kc -@vc -@ke -@vp -@xk -@xv -@l -@y G2=H*KD*p hv=B*T*H*a -dv "
		ROPE_B("dk", "KD", "KV") "G1=H*KD*p hk=B*T*H*a -r3 -hk "
		ROPE_B("dq", "H", "N") "G0=H*H*p hq=B*T*H*a -r3 -hq -@h "
		RMS_B("hv", "G7", "-@<o -@<e", "a", "g1", "@") "-g1 >^gi:gi",
	.pre_bwd = "t3=B*T*8 t4=B*T*8 t5=B*T*8 t6=EM1 -t6 -t5 G0=V*H*p "
		   "t8=B*T*8 t9=8 t10=B*T*8 t11=1279 -t11 -t10 t12=B*T*8 "
		   "t13=B*T*8 t14=1279 -t14 t15=8 t16=EM2 t17=EM3 -t17 -t16 "
		   "-t15 -t13 -t12 -t9 -t8 -t4 -t3 -^gi -&e -&cs -&sn -&cb "
		   "-&sb -%t9",
	.out = "o",
	.loss = "t7",
	.casts = "",
	.kvcopies = "kc vc",
	.wcasts = "",
	.layer_params = 9,
	.pre_params = 1,
};
