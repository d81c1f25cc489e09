package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sut/ysb"
)

// campaignsCommand loads YSB's join table for a job that is not cpjob's,
// as YSB's own setup does before its jobs start.
func campaignsCommand() *cobra.Command {
	var redisAddr, scenario string
	cmd := &cobra.Command{
		Use:   "campaigns --redis HOST:PORT",
		Short: "Load YSB's campaigns into Redis for a job of your own (cpjob ysb loads them itself)",
		Long: `Writes the ad-event scenario's join table into the Redis hash ` + ysb.CampaignsHash + `,
replacing it: each ad, by its 32 hex digits and as the UUID a JSON event's
ad_id carries, to its campaign (campaign-0000 ...). A YSB job in any language
looks up an event's ad_id there, as YSB's own jobs do; the windows the sweep
expects are per campaign.`,
		Example: `  cpjob campaigns --redis 127.0.0.1:6379
  redis-cli HGET ` + ysb.CampaignsHash + ` "$(redis-cli HRANDFIELD ` + ysb.CampaignsHash + `)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if redisAddr == "" {
				return cli.Usage(fmt.Errorf("give --redis HOST:PORT"))
			}
			s, err := scenarios.Load(scenario)
			if err != nil {
				return cli.Usage(fmt.Errorf("--scenario: %w", err))
			}
			if err := ysb.LoadCampaigns(cmd.Context(), redisAddr, s); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "cpjob campaigns: %d campaigns of %d ads each in %s at %s\n", s.Campaigns, s.AdsPerCampaign, ysb.CampaignsHash, redisAddr)
			return nil
		},
	}
	cmd.Flags().StringVar(&redisAddr, "redis", "", "HOST:PORT of the Redis the job looks its campaigns up in")
	cmd.Flags().StringVar(&scenario, "scenario", "ad-event", "the ad-event scenario the senders send")
	return cmd
}
