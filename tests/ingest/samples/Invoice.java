package com.example.billing;

import java.math.BigDecimal;

/** An invoice with its lines. */
public class Invoice {
    private final BigDecimal total;

    public Invoice(BigDecimal total) {
        this.total = total;
    }

    /**
     * Total including tax.
     */
    @Override
    public BigDecimal totalWithTax(BigDecimal rate) {
        return total.multiply(BigDecimal.ONE.add(rate));
    }

    public interface Visitor {
        void visit(Invoice invoice);
    }
}

enum Currency { EUR, USD }
