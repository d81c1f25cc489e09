package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/profiler"
)

func logsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "logs", Short: "Read profiler logs (binary block files)"}
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
			return eachLog(args, func(recs []profiler.Record) error {
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
			}, nil)
		},
	}
	stats := &cobra.Command{
		Use:     "stats FILE...",
		Short:   "Summarise logs: records, blocks, TSC span, id range, damage",
		Example: "  cpsweep logs stats /tmp/*.log",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			for _, path := range args {
				var n, blocks, minID, maxID, firstTSC, lastTSC uint64
				minID = ^uint64(0)
				damaged := 0
				err := eachLog([]string{path}, func(recs []profiler.Record) error {
					blocks++
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
					path, n, blocks, firstTSC, lastTSC, lastTSC-firstTSC, minID, maxID, damaged)
			}
			return nil
		},
	}
	cmd.AddCommand(cat, stats)
	return cmd
}

// eachLog reads every file, calling fn per intact block; damage is reported
// on stderr (and to onDamage) with the file and offset, and skipped.
func eachLog(paths []string, fn func([]profiler.Record) error, onDamage func(profiler.Corruption)) error {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		bad, err := profiler.ReadBlocks(f, fn)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, c := range bad {
			fmt.Fprintf(os.Stderr, "%s: damaged at %v (skipped; the blocks after it were read)\n", path, c)
			if onDamage != nil {
				onDamage(c)
			}
		}
	}
	return nil
}
