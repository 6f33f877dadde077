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
		 "t4=B*T*H*a t5=B*T*H*a t6=B*T*H*a t7=B*N*T*4 t8=B*T*H*a "
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
	.layer_params = 12,
};

const msim_tscripts_t msim_gpt2_amp = {
	.pre = "t0=B*T*H*p t1=T*8 t2=T*8 -t1 t3=T*H*p t4=B*T*H*p t5=B*T*H "
	       "t6=B*T*H*p -t4",
	.layer = "-^t20 -^t18 -^t41 t0=B*T*H*4 t1=B*T*4 t2=B*T*4 t3=H*Q*a "
		 "t4=B*T*H*a t5=Q*a t6=B*T*Q*a !ws t7=B*T*H*a t8=B*T*H*a t9=8 "
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
	.layer_params = 12,
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
};
