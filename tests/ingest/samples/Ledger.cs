using System;

namespace Billing.Accounts
{
    /// <summary>A ledger of entries.</summary>
    public class Ledger
    {
        private decimal balance;

        public decimal Balance { get { return balance; } }

        /// <summary>Post an amount.</summary>
        [Obsolete("use Post(Entry)")]
        public void Post(decimal amount)
        {
            balance += amount;
        }

        public Ledger() { balance = 0; }
    }

    public interface IAudit
    {
        void Check(Ledger ledger);
    }
}
