# bash completion for memsim.  Installed as "memsim" in bash-completion's
# completions directory; or source it from ~/.bashrc.
#
# Commands, options, policy names and values are read from the program
# itself (`memsim --help`, `memsim CMD --help`, `memsim policies`), so they
# follow whatever version is installed.

_memsim_commands()
{
	"$1" --help 2>/dev/null |
		sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'
}

_memsim_options()
{
	local prog=$1
	shift
	"$prog" "$@" --help 2>/dev/null |
		grep -o -e '--[a-z][a-z0-9-]*' | sort -u
}

# Policy names: the first block of `memsim policies`, up to its blank line.
_memsim_policies()
{
	"$1" policies 2>/dev/null |
		sed -n '/^$/q; s/^\([a-z0-9_-]*\): .*/\1/p'
}

# The parameters of one policy (default pytorch) as "key:" for --alloc-conf.
_memsim_conf_keys()
{
	"$1" policies 2>/dev/null |
		sed -n "/^$2: /,/^[^ ]/s/^  \\([a-z0-9_]*\\) .*/\\1:/p"
}

_memsim()
{
	local cur prev prog cmd ci i policy=pytorch
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	prog=${COMP_WORDS[0]}
	COMPREPLY=()

	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			ci=$i
			break
			;;
		esac
	done
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-p | --policy) policy=${COMP_WORDS[i+1]} ;;
		esac
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_memsim_commands "$prog") help" \
				-- "$cur"))
		fi
		return 0
	fi

	case $cmd in
	help)
		COMPREPLY=($(compgen -W "$(_memsim_commands "$prog")" -- "$cur"))
		return 0
		;;
	gen)
		if [[ $prev == gen ]]; then
			COMPREPLY=($(compgen -W 'model random' -- "$cur"))
			return 0
		fi
		;;
	esac

	case $prev in
	-p | --policy | --policies)
		if [[ $cmd == compare && $cur == *,* ]]; then
			local done=${cur%,*},
			COMPREPLY=($(compgen -P "$done" -W \
				"$(_memsim_policies "$prog")" -- "${cur##*,}"))
		else
			COMPREPLY=($(compgen -W "$(_memsim_policies "$prog")" \
				-- "$cur"))
		fi
		return 0
		;;
	-c | --alloc-conf)
		local head=
		[[ $cur == *,* ]] && head=${cur%,*},
		COMPREPLY=($(compgen -P "$head" -W \
			"$(_memsim_conf_keys "$prog" "$policy")" -- "${cur##*,}"))
		compopt -o nospace 2>/dev/null
		return 0
		;;
	-k | --kind)
		COMPREPLY=($(compgen -W 'curve overlay sweep segments' -- "$cur"))
		return 0
		;;
	-m | --mode)
		COMPREPLY=($(compgen -W 'raw async torch' -- "$cur"))
		return 0
		;;
	-t | --to)
		COMPREPLY=($(compgen -W 'csv pickle rmm bin' -- "$cur"))
		return 0
		;;
	--addresses)
		COMPREPLY=($(compgen -W 'model trace' -- "$cur"))
		return 0
		;;
	--arch)
		COMPREPLY=($(compgen -W 'gpt2 llama bert resnet50' -- "$cur"))
		return 0
		;;
	--dtype)
		COMPREPLY=($(compgen -W 'fp32 bf16-amp fp16-amp bf16' -- "$cur"))
		return 0
		;;
	--optimizer)
		COMPREPLY=($(compgen -W 'adamw sgd' -- "$cur"))
		return 0
		;;
	--checkpoint)
		COMPREPLY=($(compgen -W 'none every: sqrt budget:' -- "$cur"))
		return 0
		;;
	--weights)
		COMPREPLY=($(compgen -W 'native int8 fp8' -- "$cur"))
		return 0
		;;
	--cap | --fraction | --capacity | --device | --repeat | --requests | --runs | \
	-n | --seed | --streams | --random | -j | --jobs | -r | --run | \
	-s | --sweep | --title | --size | --x | --series | --y | --grid | -g | \
	--shard | --sizes | --lifetime | --arrival | --layers | --hidden | \
	--heads | --kv-heads | --ffn | --vocab | --positions | --batch | \
	--seq | --image | --steps | --scaler-skips | --generate | --accum | \
	--release-threshold)
		return 0 # a value to type
		;;
	esac

	if [[ $cur == -* ]]; then
		local sub=$cmd
		[[ $cmd == gen ]] && sub="gen ${COMP_WORDS[ci+1]}"
		COMPREPLY=($(compgen -W "$(_memsim_options "$prog" $sub)" \
			-- "$cur"))
		return 0
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
	return 0
}

complete -o filenames -F _memsim memsim
