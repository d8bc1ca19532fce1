# bash completion for the InferScope tools          -*- shell-script -*-
# Install as one file per tool (make install does), or source it.

_inferscope_tool()
{
	local cur prev words cword
	_init_completion -s || return

	local opts
	case ${words[0]##*/} in
	is-cat)
		opts="--encode --frame-bytes --help --output --version"
		case $prev in
		-o|--output) _filedir; return ;;
		--frame-bytes) return ;;
		esac
		;;
	inferscope)
		opts="--format --help --log-level --output --report
		    --rules-file --trace --trace-size-mb --version"
		local sub= i
		for ((i = 1; i < cword; i++)); do
			case ${words[i]} in
			run|analyze|config) sub=${words[i]}; break ;;
			esac
		done
		case $sub in
		'')
			COMPREPLY=($(compgen -W "run analyze config --help
			    --version" -- "$cur"))
			return ;;
		config)
			COMPREPLY=($(compgen -W "show --rules-file" -- "$cur"))
			return ;;
		run)
			for ((i = i + 1; i < cword; i++)); do
				if [[ ${words[i]} == -- ]]; then
					_command_offset $((i + 1))
					return
				fi
			done
			;;
		esac
		case $prev in
		-o|--output|-r|--report|-t|--trace) _filedir; return ;;
		-R|--rules-file) _filedir '@(yaml|yml)'; return ;;
		-f|--format)
			# perfetto only for analyze: run writes a report it names
			local fmts="md html json text"
			[[ $sub == analyze ]] && fmts+=" perfetto"
			COMPREPLY=($(compgen -W "$fmts" -- "$cur"))
			return ;;
		-l|--log-level)
			COMPREPLY=($(compgen -W "debug info warn error" -- "$cur"))
			return ;;
		-s|--trace-size-mb) return ;;
		esac
		if [[ $cur != -* ]]; then
			if [[ $sub == run ]]; then
				_filedir py
			else
				_filedir ist
			fi
			return
		fi
		;;
	is-analyze)
		opts="--baseline --fail-on --from --help --json --one-thread
		    --output --quiet --rules-file --skip-warmup --step --summary
		    --to --version"
		case $prev in
		-o|--output|-b|--baseline) _filedir; return ;;
		--from|--to)
			COMPREPLY=($(compgen -W "step:" -- "$cur"))
			compopt -o nospace
			return ;;
		--step) return ;;
		-r|--rules-file) _filedir '@(yaml|yml)'; return ;;
		-f|--fail-on)
			COMPREPLY=($(compgen -W "regression>5% wall>5% step>5%
			    severity>=high severity>=medium gpu_busy<50%
			    rule:gpu_idle rule:transfer rule:sync
			    rule:launch_bound rule:cpu_contention
			    rule:memory_pressure rule:gpu_bound rule:gc_pause
			    rule:startup rule:step_wait" -- "$cur"))
			return ;;
		esac
		;;
	is-info)
		opts="--help --json --version"
		;;
	is-merge)
		opts="--help --memory-mb --output --quiet --version"
		case $prev in
		-o|--output) _filedir; return ;;
		-m|--memory-mb) return ;;
		esac
		;;
	is-report)
		opts="--ascii --color --format --from --help --min-dur-us --output
		    --quiet --summary --to --version"
		case $prev in
		-o|--output) _filedir; return ;;
		--from|--to|--min-dur-us) return ;;
		-f|--format)
			COMPREPLY=($(compgen -W "md html json perfetto text" -- "$cur"))
			return ;;
		--color)
			COMPREPLY=($(compgen -W "always never auto" -- "$cur"))
			return ;;
		esac
		;;
	is-record)
		# after "--" (or the command) complete the command itself
		local i
		for ((i = 1; i < cword; i++)); do
			if [[ ${words[i]} == -- ]]; then
				_command_offset $((i + 1))
				return
			fi
		done
		opts="--capture-range --delay --dump-on --duration --help --log-level
		    --no-gpu --no-python --no-python-calls --no-sample --output
		    --py-min-us --recover --ring --sample-hz --trace-size-mb
		    --version"
		case $prev in
		-o|--output) _filedir; return ;;
		--recover) _filedir -d; return ;;
		--log-level)
			COMPREPLY=($(compgen -W "debug info warn error" -- "$cur"))
			return ;;
		--py-min-us|--sample-hz|--trace-size-mb|--delay|--duration)
			return ;;
		--dump-on)
			COMPREPLY=($(compgen -W "SIGUSR1 api exit" -- "$cur"))
			return ;;
		--capture-range)
			COMPREPLY=($(compgen -W "api cudaProfilerApi nvtx:" -- "$cur"))
			compopt -o nospace
			return ;;
		esac
		if [[ $cur != -* ]]; then
			_command_offset "$cword"
			return
		fi
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		[[ ${COMPREPLY-} == *= ]] && compopt -o nospace
		return
	fi
	if [[ ${words[0]##*/} == is-cat ]] && [[ " ${words[*]} " == *" --encode "* || " ${words[*]} " == *" -e "* ]]; then
		_filedir '@(jsonl|json)'
	else
		_filedir ist
	fi
}
complete -F _inferscope_tool inferscope is-analyze is-cat is-info is-merge is-record is-report
