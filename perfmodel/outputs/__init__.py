"""What people and other tools read: tables, JSON and CSV, explanations, plots, workbook exports, atomic writes."""
