package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/profiler"
)

func logsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "logs", Short: "Read profiler logs (binary block files)"}
	var partial bool
	cmd.PersistentFlags().BoolVar(&partial, "partial", false, "exit 0 even when blocks were damaged (they are listed on stderr and skipped either way)")
	cat := &cobra.Command{
		Use:     "cat FILE...",
		Short:   "Print every record as tsc,id (damaged blocks are reported on stderr and skipped)",
		Example: "  cpsweep logs cat receive.log | head",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			w := bufio.NewWriter(os.Stdout)
			defer w.Flush()
			var line []byte
			damaged := 0
			_, err := eachLog(args, func(recs []profiler.Record) error {
				for _, r := range recs {
					line = strconv.AppendUint(line[:0], r.TSC, 10)
					line = append(line, ',')
					line = strconv.AppendUint(line, r.ID, 10)
					line = append(line, '\n')
					if _, err := w.Write(line); err != nil {
						return err
					}
				}
				return nil
			}, func(profiler.Corruption) { damaged++ })
			if err != nil {
				return err
			}
			return refuseDamagedLogs(damaged, partial)
		},
	}
	stats := &cobra.Command{
		Use:     "stats FILE...",
		Short:   "Summarise logs: records, blocks, TSC span, id range, damage",
		Example: "  cpsweep logs stats /tmp/*.log",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			total := 0
			for _, path := range args {
				var n, minID, maxID, firstTSC, lastTSC uint64
				minID = ^uint64(0)
				damaged := 0
				blocks, err := eachLog([]string{path}, func(recs []profiler.Record) error {
					for _, r := range recs {
						if n == 0 {
							firstTSC = r.TSC
						}
						n++
						lastTSC = r.TSC
						minID, maxID = min(minID, r.ID), max(maxID, r.ID)
					}
					return nil
				}, func(c profiler.Corruption) { damaged++ })
				if err != nil {
					return err
				}
				if n == 0 {
					minID = 0
				}
				fmt.Printf("%s: %d records in %d blocks; TSC %d..%d (%d ticks); ids %d..%d; %d damaged region(s)\n",
					termsafe.Escape(path), n, blocks, firstTSC, lastTSC, lastTSC-firstTSC, minID, maxID, damaged)
				total += damaged
			}
			return refuseDamagedLogs(total, partial)
		},
	}
	cmd.AddCommand(cat, stats)
	return cmd
}

// refuseDamagedLogs is the run directories' policy for loose logs: damage
// is an error (exit 1) unless --partial accepts what is intact.
func refuseDamagedLogs(damaged int, partial bool) error {
	if damaged == 0 || partial {
		return nil
	}
	return fmt.Errorf("%d damaged region(s) (listed above) were skipped: pass --partial to accept what is intact", damaged)
}

// eachLog reads every file, calling fn with every intact block's records
// (in pieces, see profiler.ReadChunk), and returns how many intact blocks
// it read; damage is reported on stderr (and to onDamage) with the file
// and offset, and skipped.
func eachLog(paths []string, fn func([]profiler.Record) error, onDamage func(profiler.Corruption)) (int, error) {
	blocks := 0
	for _, path := range paths {
		n, bad, err := readLog(path, fn)
		blocks += n
		if err != nil {
			// the path is the user's, but may come from a run directory's
			// listing: one line, its control characters escaped
			return blocks, errors.New(termsafe.Escape(fmt.Sprintf("%s: %v", path, err)))
		}
		for _, c := range bad {
			fmt.Fprintf(os.Stderr, "%s: damaged at %v (skipped; the blocks after it were read)\n", termsafe.Escape(path), c)
			if onDamage != nil {
				onDamage(c)
			}
		}
	}
	return blocks, nil
}

func readLog(path string, fn func([]profiler.Record) error) (int, []profiler.Corruption, error) {
	f, err := readfile.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	br := profiler.NewBlockReader(f)
	var recs []profiler.Record
	for {
		recs, err = br.Next(recs[:0])
		if err == io.EOF {
			return br.Blocks, br.Corruptions, nil
		}
		if err != nil {
			return br.Blocks, br.Corruptions, err
		}
		if err := fn(recs); err != nil {
			return br.Blocks, br.Corruptions, err
		}
	}
}
